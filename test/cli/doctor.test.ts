import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { doctorRows } from '../../src/cli/doctor.ts';
import { SLACK_BOT_SCOPES } from '../../integrations/slack/slack-scopes.ts';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/fake-anthropic.ts';
import { startFakeGitHub } from '../fakes/fake-github.ts';
import { startFakeLinear } from '../fakes/linear/fake-linear.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { startFakeModalForSdk } from '../fakes/modal/fake-modal-sdk.ts';

const BOT_TOKEN = 'xoxb-doctor-0000000001';
type FakeGitHub = Awaited<ReturnType<typeof startFakeGitHub>>;
type FakeLinear = Awaited<ReturnType<typeof startFakeLinear>>;

/** A loopback URL where nothing listens (the connection is refused). */
async function closedUrl(path: string): Promise<string> {
  const fake = await startFakeSlackApi({ botToken: 'xoxb-closed-0000000' });
  const port = new URL(fake.apiUrl).port;
  await fake.close();
  return `http://127.0.0.1:${port}${path}`;
}

/**
 * `patchbay doctor` against the fakes of every service it calls (Slack Web API, GitHub REST,
 * Linear GraphQL, Anthropic), a real PostgreSQL and the real sandbox: all green; then each service
 * broken one way (a bad token, a missing scope or permission, unreachable) makes exactly one red
 * row that names the cause and the fix.
 */
describe('patchbay doctor', () => {
  let slack: FakeSlackApi;
  let slackNoScope: FakeSlackApi;
  let github: FakeGitHub;
  let githubNoStatuses: FakeGitHub;
  let linear: FakeLinear;
  let anthropic: FakeAnthropic;
  let remote: RemoteFixture;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  let env: Record<string, string>;
  const log = pino({ level: 'silent' });

  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT_TOKEN });
    slackNoScope = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      scopes: SLACK_BOT_SCOPES.filter((s) => s !== 'reactions:write'),
    });
    remote = await createRemote();
    await remote.pushCommit('README.md', '# Demo\n', 'Initial commit');
    github = await startFakeGitHub();
    await github.addRepo('acme', 'widgets', remote.remote, 101);
    githubNoStatuses = await startFakeGitHub({
      appPermissions: {
        contents: 'write',
        issues: 'write',
        pull_requests: 'write',
        metadata: 'read',
        checks: 'read',
        actions: 'read',
      },
    });
    await githubNoStatuses.addRepo('acme', 'widgets', remote.remote, 101);
    linear = await startFakeLinear();
    // The doctor's round trip: the model calls the echo tool, then answers once it has the result.
    anthropic = await startFakeAnthropic({
      script: (body) =>
        body.tools?.length && !JSON.stringify(body.messages.at(-1)).includes('tool_result')
          ? { content: [{ type: 'tool_use', name: 'echo', input: { text: 'pong' } }] }
          : { content: [{ type: 'text', text: 'pong' }] },
    });
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-doctor-'));
    env = {
      DATA_DIR: join(dir, 'data'),
      // Where Slack, GitHub and Linear can post their events (see the events row).
      PUBLIC_URL: 'https://patchbay.example.com',
      DATABASE_URL: database.url,
      MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: anthropic.baseUrl,
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: 'doctor-signing-secret',
      SLACK_API_URL: slack.apiUrl,
      GITHUB_APP_ID: String(github.appId),
      GITHUB_APP_PRIVATE_KEY: github.privateKey,
      GITHUB_WEBHOOK_SECRET: 'doctor-webhook-secret',
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
      LINEAR_ACCESS_TOKEN: linear.accessToken,
      LINEAR_WEBHOOK_SECRET: 'doctor-linear-secret',
      LINEAR_API_URL: linear.apiUrl,
    };
  });
  afterAll(async () => {
    for (const fake of [slack, slackNoScope, github, githubNoStatuses, linear, anthropic]) await fake?.close();
    await remote?.cleanup();
    await database?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const rowsFor = (overrides: Record<string, string | undefined>) =>
    doctorRows({ env: { ...env, ...overrides }, log, out: process.stdout });
  const red = async (overrides: Record<string, string | undefined>) => (await rowsFor(overrides)).filter((r) => !r.ok);

  it('the manifest asks for exactly the scopes the doctor checks', () => {
    const manifest = readFileSync(new URL('../../slack-app-manifest.yaml', import.meta.url), 'utf8');
    const bot = /\n {4}bot:\n((?: {6}- .+\n)+)/.exec(manifest)![1]!;
    expect([...bot.matchAll(/- ([a-z_:.]+)/g)].map((m) => m[1])).toEqual([...SLACK_BOT_SCOPES]);
  });

  it('is all green against working services', { timeout: 60_000 }, async () => {
    const rows = await rowsFor({});
    expect(rows.filter((r) => !r.ok)).toEqual([]);
    expect(rows.map((r) => [r.check, r.ok])).toEqual([
      ['configuration', true],
      ['model', true],
      ['slack', true],
      ['github', true],
      ['linear', true],
      ['events', true],
      ['sandbox', true],
      ['database', true],
      ['disk', true],
    ]);
    expect(rows.find((r) => r.check === 'github')?.detail).toBe(
      'App patchbay-test with every permission, installed on acme',
    );
    expect(rows.find((r) => r.check === 'database')?.detail).toMatch(
      /^PostgreSQL \d+\.\d+.*, role is not a superuser$/,
    );
    expect(rows.find((r) => r.check === 'model')?.detail).toMatch(/called a tool and answered with its result/);
    expect(anthropic.calls.at(-1)?.body.messages.at(-1)?.content).toMatchObject([{ type: 'tool_result' }]);
    expect([...slack.refused, ...github.refused, ...linear.refused]).toEqual([]);
  });

  it.each([
    [
      'a bad Slack token',
      { SLACK_BOT_TOKEN: 'xoxb-not-the-token-0001' },
      'slack',
      /^Slack refused SLACK_BOT_TOKEN \(invalid_auth\)$/,
      /Bot User OAuth Token/,
    ],
    [
      'a Slack token missing a scope',
      { SLACK_API_URL: 'no-scope' },
      'slack',
      /lacks the scopes reactions:write$/,
      /OAuth & Permissions page/,
    ],
    [
      'Slack unreachable',
      { SLACK_API_URL: 'closed:/api/' },
      'slack',
      /^Slack cannot be reached at http:\/\/127\.0\.0\.1:\d+\/api\/: /,
      /SLACK_API_URL/,
    ],
    [
      'a GitHub App missing a permission',
      { GITHUB_API_URL: 'no-statuses', GITHUB_APP_ID: 'no-statuses-id', GITHUB_APP_PRIVATE_KEY: 'no-statuses-key' },
      'github',
      /^App patchbay-test lacks statuses: write$/,
      /Permissions & events/,
    ],
    [
      'GitHub unreachable',
      { GITHUB_API_URL: 'closed:/api/v3' },
      'github',
      /^GitHub cannot be reached at /,
      /GITHUB_API_URL/,
    ],
    [
      'a bad Linear token',
      { LINEAR_ACCESS_TOKEN: 'lin_not_the_token' },
      'linear',
      /^Linear refused the token/,
      /LINEAR_ACCESS_TOKEN/,
    ],
    ['a bad model key', { ANTHROPIC_API_KEY: 'not-the-key' }, 'model', /^anthropic\/claude-sonnet-4-6: /, /API key/],
    ['no model', { MODEL_PROVIDER: undefined }, 'model', /^no model is configured/, /MODEL_PROVIDER/],
    ['an unreachable database', { DATABASE_URL: 'closed-db' }, 'database', /^cannot connect: /, /DATABASE_URL/],
    [
      'GitHub webhooks with PUBLIC_URL on this machine',
      { PUBLIC_URL: 'http://localhost:3000' },
      'events',
      /GitHub webhooks cannot arrive: GitHub posts them to PUBLIC_URL, and http:\/\/localhost:3000 is reachable from this machine only/,
      /GITHUB_EVENTS=polling/,
    ],
  ] as const)(
    '%s: one red row naming the cause and the fix',
    { timeout: 60_000 },
    async (_case, broken, check, cause, fix) => {
      const resolve = async (_key: string, value: string | undefined): Promise<string | undefined> => {
        if (value === undefined) return undefined;
        if (value === 'no-scope') return slackNoScope.apiUrl;
        if (value === 'no-statuses') return githubNoStatuses.apiUrl;
        if (value === 'no-statuses-id') return String(githubNoStatuses.appId);
        if (value === 'no-statuses-key') return githubNoStatuses.privateKey;
        if (value.startsWith('closed:')) return closedUrl(value.slice('closed:'.length));
        if (value === 'closed-db') return (await closedUrl('/x')).replace('http://', 'postgres://nobody@');
        return value;
      };
      const overrides = Object.fromEntries(
        await Promise.all(Object.entries(broken).map(async ([k, v]) => [k, await resolve(k, v)] as const)),
      );
      const rows = await red(overrides);
      expect(rows.map((r) => r.check)).toEqual([check]);
      expect(rows[0]!.detail).toMatch(cause);
      expect(rows[0]!.fix).toMatch(fix);
    },
  );
});

/**
 * Behind a firewall: PUBLIC_URL on this machine, GitHub by polling without a
 * webhook secret; every event can still arrive, and the doctor says how.
 */
describe('patchbay doctor behind a firewall', () => {
  it('is green with GitHub polling and PUBLIC_URL on this machine, and names the events polling cannot bring', {
    timeout: 60_000,
  }, async () => {
    const github = await startFakeGitHub();
    const remote = await createRemote();
    const database = await createTestDatabase();
    const dir = await mkdtemp(join(tmpdir(), 'patchbay-doctor-fw-'));
    try {
      await remote.pushCommit('README.md', '# Demo\n', 'Initial commit');
      await github.addRepo('acme', 'widgets', remote.remote, 101);
      const rows = await doctorRows({
        env: {
          DATA_DIR: join(dir, 'data'),
          DATABASE_URL: database.url,
          MODEL_PROVIDER: 'scripted',
          SCRIPTED_SCENARIO: '/dev/null',
          PUBLIC_URL: 'http://localhost:3000',
          GITHUB_APP_ID: String(github.appId),
          GITHUB_APP_PRIVATE_KEY: github.privateKey,
          GITHUB_API_URL: github.apiUrl,
          GITHUB_GIT_URL: github.gitUrl,
          GITHUB_EVENTS: 'polling',
        },
        log: pino({ level: 'silent' }),
        out: process.stdout,
      });
      expect(rows.filter((r) => !r.ok)).toEqual([]);
      expect(rows.find((r) => r.check === 'events')?.detail).toMatch(
        /^GitHub by polling every 30 s: mentions in issue, pull request and review comments, and CI of Patchbay's own pull requests \(not reviews, /,
      );
      expect(github.refused).toEqual([]);
    } finally {
      await github.close();
      await remote.cleanup();
      await database.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** SANDBOX=modal: the doctor's Modal row against the fake Modal, through the SDK. */
describe('patchbay doctor with SANDBOX=modal', () => {
  let modal: Awaited<ReturnType<typeof startFakeModalForSdk>>;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  const log = pino({ level: 'silent' });

  beforeAll(async () => {
    modal = await startFakeModalForSdk();
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-doctor-modal-'));
  });
  afterAll(async () => {
    await modal?.close();
    await database?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const modalRow = async (env: Record<string, string>) => {
    const rows = await doctorRows({
      env: {
        DATA_DIR: join(dir, 'data'),
        DATABASE_URL: database.url,
        SCRIPTED_SCENARIO: '/dev/null',
        MODEL_PROVIDER: 'scripted',
        ...modal.env(),
        ...env,
      },
      log,
      out: process.stdout,
    });
    return rows.find((r) => r.check === 'modal');
  };

  it('accepts the credentials when Modal does, and names the fix when it refuses them', {
    timeout: 60_000,
  }, async () => {
    expect(await modalRow({})).toEqual({
      check: 'modal',
      ok: true,
      detail: 'credentials accepted; app patchbay-test is created by the first sandbox',
    });
    const refused = await modalRow({ MODAL_TOKEN_SECRET: 'as-not-the-secret' });
    expect(refused).toMatchObject({
      ok: false,
      detail: expect.stringMatching(
        /^Modal refused the credentials while looking up the Modal app patchbay-test \(.*\): check MODAL_TOKEN_ID and MODAL_TOKEN_SECRET$/,
      ),
      fix: expect.stringContaining('API Tokens'),
    });
  });
});
