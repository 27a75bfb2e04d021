import { describe, expect, it } from 'vitest';
import { eventRoutes, reachOf } from '../../src/cli/doctor-events.ts';
import { loadConfig } from '../../src/config.ts';

describe('who can reach PUBLIC_URL, from its host alone', () => {
  it.each([
    ['http://localhost:3000', 'this machine'],
    ['http://127.0.0.1:3000', 'this machine'],
    ['http://[::1]:3000', 'this machine'],
    ['http://patchbay.localhost', 'this machine'],
    ['http://10.1.2.3', 'this network'],
    ['http://172.20.0.5', 'this network'],
    ['http://192.168.1.9:8080', 'this network'],
    ['http://patchbay.corp', 'this network'],
    ['http://buildbox', 'this network'],
    ['https://patchbay.example.com', 'the internet'],
    ['https://172.32.0.1', 'the internet'],
  ])('%s: %s', (url, reach) => {
    expect(reachOf(url)).toBe(reach);
  });
});

const base = { DATA_DIR: '/tmp/patchbay-doctor-events', MODEL_PROVIDER: 'scripted', SCRIPTED_SCENARIO: '/dev/null' };
const slackHttp = { SLACK_BOT_TOKEN: 'xoxb-1', SLACK_SIGNING_SECRET: 'secret' };
const slackSocket = { SLACK_BOT_TOKEN: 'xoxb-1', SLACK_APP_TOKEN: 'xapp-1-A1-1-abc' };
const github = { GITHUB_APP_ID: '1', GITHUB_APP_PRIVATE_KEY: 'pem', GITHUB_WEBHOOK_SECRET: 'wh' };
const linear = { LINEAR_ACCESS_TOKEN: 'lin_1', LINEAR_WEBHOOK_SECRET: 'lwh' };

describe("the doctor's events row", () => {
  it.each([
    ['no surface', {}, undefined],
    ['GitHub webhooks to a public https URL', { ...github, PUBLIC_URL: 'https://p.example.com' }, true],
    ['GitHub webhooks to localhost', { ...github, PUBLIC_URL: 'http://localhost:3000' }, false],
    ['GitHub webhooks to a private address on github.com', { ...github, PUBLIC_URL: 'http://10.0.0.2' }, false],
    [
      'GitHub Enterprise Server webhooks to a private address',
      { ...github, PUBLIC_URL: 'http://10.0.0.2', GITHUB_API_URL: 'https://ghe.corp/api/v3' },
      true,
    ],
    ['GitHub polling behind a firewall', { ...github, GITHUB_EVENTS: 'polling', PUBLIC_URL: 'http://localhost' }, true],
    ['Slack Socket Mode behind a firewall', { ...slackSocket, PUBLIC_URL: 'http://localhost' }, true],
    ['Slack HTTP events to localhost', { ...slackHttp, PUBLIC_URL: 'http://localhost' }, false],
    ['Slack HTTP events to plain http', { ...slackHttp, PUBLIC_URL: 'http://p.example.com' }, false],
    ['Linear behind a firewall', { ...linear, PUBLIC_URL: 'http://localhost' }, false],
    [
      'Slack Socket Mode and GitHub polling behind a firewall',
      {
        ...slackSocket,
        ...github,
        GITHUB_EVENTS: 'polling',
        GITHUB_WEBHOOK_SECRET: '',
        PUBLIC_URL: 'http://localhost',
      },
      true,
    ],
  ])('%s: arrives %s', (_case, env, ok) => {
    expect(eventRoutes(loadConfig({ ...base, ...env }))?.ok).toBe(ok);
  });

  it('says which surface is blocked and what to change', () => {
    const row = eventRoutes(loadConfig({ ...base, ...slackSocket, ...github, PUBLIC_URL: 'http://localhost:3000' }))!;
    expect(row.detail).toBe(
      'Slack by Socket Mode (no public URL needed); GitHub webhooks cannot arrive: GitHub posts them to PUBLIC_URL, and http://localhost:3000 is reachable from this machine only',
    );
    expect(row.fix).toMatch(/^GitHub: set GITHUB_EVENTS=polling; or set PUBLIC_URL/);
  });
});
