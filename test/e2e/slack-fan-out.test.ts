import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/patchbay-fixture.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';

/**
 * Fan-out from a Slack mention, configured from the environment only (issue 22's acceptance, the
 * core's part): the parent fans out three sub-tasks, two on its repository and one on a second;
 * they run at the same time, the second repository's sub-task opens its own pull request, and
 * the parent resumes with every sub-task's result. Slack's Web API and GitHub are loopback fakes.
 */
describe('Slack → fan-out over two repositories, configured from the environment', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  const upstreams: RemoteFixture[] = [];
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  let app: Patchbay;
  let host: string;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    for (const name of ['web', 'api']) {
      const upstream = await createRemote();
      upstreams.push(upstream);
      await github.addRepo(owner, name, upstream.remote, 77);
    }
    host = new URL(github.gitUrl).host;
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-e2e-fanout-'));
    // One script for every session: the parent fans out at its first turn; a sub-task is refused
    // the same call (depth 1), then does slow work and ends; the parent, resumed, does the same.
    const tasks = [
      { title: 'Web part one', prompt: 'Change the web app, part one' },
      { title: 'Web part two', prompt: 'Change the web app, part two' },
      { title: 'API client', prompt: 'Change the API client', repo: `${github.gitUrl}/${owner}/api` },
    ];
    await writeFile(
      join(dir, 'scenario.json'),
      JSON.stringify({
        turns: [
          { toolCalls: [{ name: 'spawn_subtasks', input: { tasks } }] },
          { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 2; echo changed > CHANGES.md' } }] },
          { text: 'Changed it.' },
        ],
      }),
    );
    const config = loadConfig({
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: database.url,
      PORT: '0',
      PUBLIC_URL: 'http://patchbay.test',
      LOG_LEVEL: 'silent',
      MODEL_PROVIDER: 'scripted',
      SCRIPTED_SCENARIO: join(dir, 'scenario.json'),
      WORKER_CONCURRENCY: '4',
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      GITHUB_APP_ID: String(github.appId),
      GITHUB_APP_PRIVATE_KEY: github.privateKey,
      GITHUB_WEBHOOK_SECRET: 'e2e-webhook-secret',
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
    });
    app = await startPatchbay(config, {
      log: pino({ level: 'silent' }),
      serve: true,
      work: true,
      integrations: (context) => buildIntegrations(config, context),
    });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await database?.close();
    await github?.close();
    await slack?.close();
    for (const upstream of upstreams) await upstream.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs the three sub-tasks side by side, the second repository’s opens its PR, and the parent resumes with all three', {
    timeout: 300_000,
  }, async () => {
    const mention = appMention({ user: 'U0ALICE01', text: `split this up in <https://${host}/${owner}/web>` });
    const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(mention)));
    expect((await fetch(`${app.url}/slack/events`, { method: 'POST', ...signed })).status).toBe(200);
    const parent = await waitFor(
      () => app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs: mention.ts }),
      'the session',
    );
    const done = await waitForStatus(app, parent.id, ['completed', 'failed', 'cancelled'], 240_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');

    const children = await app.store.children(parent.id);
    expect(children.map((c) => [c.title, c.repo, c.status])).toEqual([
      ['Web part one', `${github.gitUrl}/${owner}/web`, 'completed'],
      ['Web part two', `${github.gitUrl}/${owner}/web`, 'completed'],
      ['API client', `${github.gitUrl}/${owner}/api`, 'completed'],
    ]);
    expect(children.map((c) => c.branch)).toEqual([1, 2, 3].map((n) => `${done.branch}-sub-${n}`));

    // Their runs overlap in the event log: each started before the others ended.
    const spans = await Promise.all(children.map((c) => runSpan(app, c.sessionId)));
    for (const a of spans) for (const b of spans) expect(a.start < b.end).toBe(true);

    // The sub-tasks on the parent's repository push their branches and open no PR; the other opens its own.
    const pullsOf = (branch: string | null) => github.pulls.filter((p) => p.head === branch);
    expect(pullsOf(children[0]!.branch)).toEqual([]);
    expect(pullsOf(children[1]!.branch)).toEqual([]);
    const apiPull = pullsOf(children[2]!.branch);
    expect(apiPull.map((p) => p.repo)).toEqual([`${owner}/api`]);
    expect(children[2]!.prUrl).toBe(`${github.gitUrl}/${owner}/api/pull/${apiPull[0]!.number}`);

    // The parent's spawn call got every sub-task's result.
    const spawnEnd = (await app.store.events(parent.id, { types: ['tool-end'] }))
      .map((e) => e.event)
      .find((e) => e.type === 'tool-end' && e.name === 'spawn_subtasks');
    const output = spawnEnd?.type === 'tool-end' ? spawnEnd.output : '';
    for (const [i, child] of children.entries()) {
      expect(output).toContain(`Sub-task ${i + 1} "${child.title}" (${child.repo}): completed`);
      expect(output).toContain(`branch: ${child.branch}, commit ${child.commit}`);
    }
    expect(output).toContain('changed files: CHANGES.md (+1 -0)');
    expect(output).toContain(`pull request: ${children[2]!.prUrl}`);
    expect(github.refused).toEqual([]);
  });
});

/** When a session's first run started and its last ended, from its status changes. */
async function runSpan(app: Patchbay, sessionId: string): Promise<{ start: number; end: number }> {
  const changes = await app.store.events(sessionId, { types: ['status-changed'] });
  const at = (to: string[]) => changes.filter((e) => e.event.type === 'status-changed' && to.includes(e.event.to));
  return {
    start: Date.parse(at(['running'])[0]!.at),
    end: Date.parse(at(['completed', 'failed', 'cancelled']).at(-1)!.at),
  };
}
