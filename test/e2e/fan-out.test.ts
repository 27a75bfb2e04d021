import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { StoredEvent } from '../../src/core/events.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { passingVerdict, scriptedVerifier } from '../helpers/scripted-verifier.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';

const firstText = (messages: readonly ModelMessage[]) => {
  const first = messages[0];
  return first?.role === 'user' ? first.content : '';
};
const turns = (messages: readonly ModelMessage[]) => messages.filter((m) => m.role === 'assistant').length;
const lastTool = (messages: readonly ModelMessage[]) => {
  const last = messages.at(-1);
  return last?.role === 'tool' ? last : undefined;
};

/**
 * A child edits in one slow shell call (so the children's runs overlap), then ends. The two
 * children on the API repository set the same line of settings.txt: the planted conflict.
 */
const childWork: Record<string, string> = {
  'SUB-RETRIES': `sleep 3; sed -i 's/^timeout = 10$/timeout = 20/' settings.txt; printf 'retries = 3\\n' > retries.txt`,
  'SUB-LOGGING': `sleep 3; sed -i 's/^timeout = 10$/timeout = 30/' settings.txt; printf 'level = info\\n' > logging.txt`,
  'SUB-CLIENT': `sleep 3; printf 'timeout = 25\\n' > client-settings.txt`,
};

function childTurn(tag: string, turn: number): ScriptedTurn {
  return turn === 0
    ? { toolCalls: [{ name: 'run_shell', input: { command: childWork[tag] } }] }
    : { text: `Done: ${tag}.` };
}

const resolveConflict =
  "printf 'name = demo\\ntimeout = 25\\n' > settings.txt && git add settings.txt && git commit --no-edit";

/**
 * The parent, by what its last tool call answered: fan out three sub-tasks (two here, one on the
 * client repository), merge them, resolve the conflict the merge leaves, merge the rest, finish.
 */
function parentTurn(messages: readonly ModelMessage[], clientRepo: string): ScriptedTurn {
  const last = lastTool(messages);
  if (!last)
    return {
      toolCalls: [
        {
          name: 'spawn_subtasks',
          input: {
            tasks: [
              { title: 'Retries', prompt: 'SUB-RETRIES: raise the timeout to 20 and add retries' },
              { title: 'Logging', prompt: 'SUB-LOGGING: raise the timeout to 30 and add logging' },
              { title: 'Client timeout', prompt: 'SUB-CLIENT: give the client the new timeout', repo: clientRepo },
            ],
          },
        },
      ],
    };
  switch (last.name) {
    case 'spawn_subtasks':
    case 'run_shell':
      return { toolCalls: [{ name: 'merge_subtasks', input: {} }] };
    case 'merge_subtasks':
      return last.content.includes('conflicts in')
        ? { toolCalls: [{ name: 'run_shell', input: { command: resolveConflict } }] }
        : { text: `Gathered the sub-tasks. Last merge said:\n${last.content}` };
    default:
      return { text: `Stopped after an unexpected ${last.name}.` };
  }
}

/** One model for the whole family, told apart by the task each session was given. */
function familyModel(clientRepo: string) {
  return createScriptedProvider({
    scenario: (messages) => {
      const task = firstText(messages);
      const tag = Object.keys(childWork).find((t) => task.includes(t));
      return tag ? childTurn(tag, turns(messages)) : parentTurn(messages, clientRepo);
    },
  });
}

/** When a session's run started and when it ended, from the times of its status changes. */
function runSpan(events: StoredEvent[]): { start: number; end: number } {
  const changes = events.flatMap((e) => (e.event.type === 'status-changed' ? [{ to: e.event.to, at: e.at }] : []));
  const start = changes.find((c) => c.to === 'running');
  const end = changes.findLast((c) => ['completed', 'failed', 'cancelled'].includes(c.to));
  return { start: Date.parse(start!.at), end: Date.parse(end!.at) };
}

/**
 * Issue 22's acceptance, configured the way a user configures Patchbay (environment only, the
 * composition root with buildIntegrations), with Slack and GitHub as loopback fakes, two
 * repositories, real sandboxes and a scripted model: one Slack mention fans out into three
 * sub-tasks that run side by side; the parent gathers its repository's two through a planted
 * conflict and opens one PR, the other repository gets its own, and they link each other.
 */
describe('fan-out from a Slack mention, configured from the environment', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let api: RemoteFixture;
  let client: RemoteFixture;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  let app: Patchbay;
  /** The API repository as the fake GitHub serves it (it cloned the fixture's). */
  let apiGitDir: string;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    api = await createRemote();
    await api.pushCommit('settings.txt', 'name = demo\ntimeout = 10\n', 'Settings');
    // The repositories' checks (the gates run them on each commit): no conflict left behind.
    await api.pushCommit('Makefile', "test:\n\t! grep -n '^[<=>]\\{7\\}' settings.txt\n", 'Checks');
    client = await createRemote();
    await client.pushCommit('Makefile', 'test:\n\ttest -f README.md\n', 'Checks');
    apiGitDir = (await github.addRepo(owner, 'api', api.remote, 77)).gitDir;
    await github.addRepo(owner, 'client', client.remote, 77);
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-fan-out-'));
    const config = loadConfig({
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: database.url,
      PORT: '0',
      PUBLIC_URL: 'http://patchbay.test',
      LOG_LEVEL: 'silent',
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
      log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
      serve: true,
      work: true,
      model: familyModel(`${github.gitUrl}/${owner}/client`),
      verifierModel: scriptedVerifier(passingVerdict),
      integrations: (context) => buildIntegrations(config, context),
    });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await database?.close();
    await github?.close();
    await slack?.close();
    await api?.cleanup();
    await client?.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  const postEvent = (payload: unknown) => {
    const signed = signBody(SIGNING_SECRET, JSON.stringify(payload));
    return fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body });
  };

  it('runs three sub-tasks side by side, merges two through a conflict into one PR, and links it with the other repository’s PR in the thread', {
    timeout: 300_000,
  }, async () => {
    const host = new URL(github.gitUrl).host;
    const mention = appMention({
      user: 'U0ALICE01',
      text: `raise the timeout everywhere in <https://${host}/${owner}/api>, and in its client`,
    });
    expect((await postEvent(envelope(mention))).status).toBe(200);
    const parent = await waitFor(
      () => app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs: mention.ts }),
      'the session',
    );
    const done = await waitForStatus(app, parent.id, ['completed', 'failed', 'cancelled'], 240_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');

    // Three children, two on the parent's repository and one on the client's, all completed.
    const children = await app.store.children(parent.id);
    const apiRepo = `${github.gitUrl}/${owner}/api`;
    const clientRepo = `${github.gitUrl}/${owner}/client`;
    expect(children.map((c) => [c.title, c.repo, c.status])).toEqual([
      ['Retries', apiRepo, 'completed'],
      ['Logging', apiRepo, 'completed'],
      ['Client timeout', clientRepo, 'completed'],
    ]);
    // Each on its own branch, named after the parent's.
    expect(children.map((c) => c.branch)).toEqual([1, 2, 3].map((n) => `${done.branch}-sub-${n}`));

    // The parent's spawn call got every sub-task's result: status, branch, commit, files, PR.
    const spawned = (await app.store.events(parent.id, { types: ['tool-end'] }))
      .map((e) => e.event)
      .find((e) => e.type === 'tool-end' && e.name === 'spawn_subtasks');
    const results = spawned?.type === 'tool-end' ? spawned.output : '';
    for (const child of children) {
      expect(results).toContain(`Sub-task ${child.index} "${child.title}" (${child.repo}): completed`);
      expect(results).toContain(`branch: ${child.branch}, commit ${child.commit}`);
    }
    expect(results).toContain('changed files: retries.txt (+1 -0), settings.txt (+1 -1)');
    expect(results).toContain(`pull request: ${children[2]!.prUrl}`);

    // Their runs overlapped in the event log: each started before every other one ended.
    const spans = await Promise.all(children.map(async (c) => runSpan(await app.store.events(c.sessionId))));
    for (const a of spans) for (const b of spans) expect(a.start).toBeLessThan(b.end);

    // The parent merged twice, hit the planted conflict once, and resolved it with its own commit.
    const merges = (await app.store.events(parent.id, { types: ['tool-end'] })).flatMap((e) =>
      e.event.type === 'tool-end' && e.event.name === 'merge_subtasks' ? [e.event] : [],
    );
    expect(merges).toHaveLength(2);
    expect(merges[0]?.output).toContain('conflicts in 1 file');
    expect(merges[0]?.output).toContain('settings.txt');
    expect(merges[1]?.isError ?? false).toBe(false);

    // One PR on the API repository, from the parent, ready (its gates passed), with everything in it.
    const apiPulls = github.pulls.filter((p) => p.repo === `${owner}/api`);
    expect(apiPulls.map((p) => p.head)).toEqual([done.branch]);
    const apiPull = apiPulls[0]!;
    expect(apiPull.draft).toBe(false);
    const head = await git(apiGitDir, 'rev-parse', `refs/heads/${done.branch}`);
    expect(github.statuses.filter((s) => s.sha === head).map((s) => s.state)).toContain('success');
    const checks = (await app.store.events(parent.id, { types: ['check-finished'] })).map((e) => e.event);
    expect(checks).toContainEqual(
      expect.objectContaining({ commit: head, phase: 'check', command: 'make test', outcome: 'passed' }),
    );
    expect(await git(apiGitDir, 'show', `${head}:settings.txt`)).toBe('name = demo\ntimeout = 25');
    expect(await git(apiGitDir, 'show', `${head}:retries.txt`)).toBe('retries = 3');
    expect(await git(apiGitDir, 'show', `${head}:logging.txt`)).toBe('level = info');
    const mergeCommits = await git(apiGitDir, 'log', '--merges', '--format=%s', head);
    expect(mergeCommits.split('\n')).toEqual(['Merge sub-task 2: Logging', 'Merge sub-task 1: Retries']);

    // The client repository got its own PR from its sub-task; the two PRs link each other.
    const clientPulls = github.pulls.filter((p) => p.repo === `${owner}/client`);
    expect(clientPulls.map((p) => p.head)).toEqual([children[2]!.branch]);
    const clientPull = clientPulls[0]!;
    const apiUrl = `${github.gitUrl}/${owner}/api/pull/${apiPull.number}`;
    const clientUrl = `${github.gitUrl}/${owner}/client/pull/${clientPull.number}`;
    expect(done.result?.prUrl).toBe(apiUrl);
    expect(apiPull.body).toContain(`Part of one change across repositories**, with [${owner}/client#`);
    expect(apiPull.body).toContain(clientUrl);
    expect(clientPull.body).toContain(apiUrl);

    // The thread lists both PRs in one message.
    const both = await waitFor(
      async () => slack.thread(CHANNEL, mention.ts).find((m) => m.text.includes(apiUrl) && m.text.includes(clientUrl)),
      'one message with both PR links',
      60_000,
    );
    expect(both.text).toContain('Opened 2 pull requests');
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });
});
