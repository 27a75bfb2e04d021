import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import {
  type AnthropicReply,
  type AnthropicRequest,
  type FakeAnthropic,
  startFakeAnthropic,
} from '../fakes/fake-anthropic.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';
const summary = 'Added CHANGES.md with a line about this change.';

/**
 * The model service as it really behaves at peak hours, through the whole app configured from the
 * environment (Slack in, GitHub out, MODEL_PROVIDER=anthropic against the loopback Messages API):
 * a 529 overloaded answer twice before it works, and an answer cut mid-stream. Each session asks
 * for its own task, and the fake answers by the task's words.
 */
describe('a model service that fails and recovers, end to end', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let anthropic: FakeAnthropic;
  let upstream: RemoteFixture;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dir: string;
  let app: Patchbay;
  let host: string;
  /** The fake GitHub's bare repository, where pushes land. */
  let hosted: string;
  /** Requests per task, counted before the fault decides: the fake's own log is the ground truth. */
  const seen = new Map<string, number>();

  /** The agent writes a file, then finishes; the verifier (a forced record_verdict) passes it. */
  function answer(body: AnthropicRequest): AnthropicReply {
    const forced = (body as { tool_choice?: { type?: string } }).tool_choice?.type === 'tool';
    if (forced) return { content: [{ type: 'tool_use', name: 'record_verdict', input: passingVerdict }] };
    const turn = body.messages.filter((m) => m.role === 'assistant').length;
    if (turn === 0)
      return {
        content: [
          { type: 'tool_use', name: 'write_file', input: { path: 'CHANGES.md', content: 'changed by patchbay\n' } },
        ],
      };
    return { content: [{ type: 'text', text: summary }] };
  }

  function script(body: AnthropicRequest): AnthropicReply {
    const task = JSON.stringify(body.messages[0]?.content ?? '');
    const forced = (body as { tool_choice?: { type?: string } }).tool_choice?.type === 'tool';
    const key = task.includes('overloaded-case') ? 'overloaded' : 'cut';
    const turn = body.messages.filter((m) => m.role === 'assistant').length;
    const step = `${key}:${forced ? 'verifier' : turn}`;
    const n = (seen.get(step) ?? 0) + 1;
    seen.set(step, n);
    // Twice at the first turn, and once more at the next: one outage for the thread, told once.
    if ((step === 'overloaded:0' && n <= 2) || (step === 'overloaded:1' && n === 1))
      return {
        kind: 'error',
        status: 529,
        type: 'overloaded_error',
        message: 'Overloaded',
        headers: { 'retry-after': '1' },
      };
    // The final answer's first try stops mid-sentence, without message_stop.
    if (key === 'cut' && step === 'cut:1' && n === 1)
      return { content: [{ type: 'text', text: summary }], fault: 'cut' };
    return answer(body);
  }

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    hosted = (await github.addRepo(owner, 'web', upstream.remote, 77)).gitDir;
    anthropic = await startFakeAnthropic({ script });
    host = new URL(github.gitUrl).host;
    database = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-model-faults-'));
    const config = loadConfig({
      DATA_DIR: join(dir, 'data'),
      DATABASE_URL: database.url,
      PORT: '0',
      PUBLIC_URL: 'http://patchbay.test',
      LOG_LEVEL: 'silent',
      SANDBOX_EGRESS_ALLOW: 'none',
      MODEL_PROVIDER: 'anthropic',
      MODEL: 'claude-sonnet-4-6',
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: anthropic.baseUrl,
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      GITHUB_APP_ID: String(github.appId),
      GITHUB_APP_PRIVATE_KEY: github.privateKey,
      GITHUB_WEBHOOK_SECRET: 'model-faults-webhook-secret',
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
    });
    app = await startPatchbay(config, {
      log: pino({ level: 'silent' }),
      serve: true,
      work: true,
      queue: { pollingIntervalSeconds: 0.5 },
      integrations: (context) => buildIntegrations(config, context),
    });
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await database?.close();
    await anthropic?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  const mention = async (words: string) => {
    const event = appMention({ user: 'U0ALICE01', text: `${words} <https://${host}/${owner}/web>` });
    const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(event)));
    const res = await fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body });
    expect(res.status).toBe(200);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs: event.ts }),
      'the session',
    );
    return { threadTs: event.ts, session };
  };

  /** The session completed with its PR, linked in the thread. */
  const expectPullRequest = async (sessionId: string, threadTs: string) => {
    const done = await waitForStatus(app, sessionId, ['completed', 'failed', 'cancelled', 'waiting'], 150_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    const pull = github.pulls.find((p) => p.head === done.branch);
    const link = `${github.gitUrl}/${owner}/web/pull/${pull!.number}`;
    expect(done.result?.prUrl).toBe(link);
    await waitFor(
      async () =>
        slack.thread(CHANNEL, threadTs).some((m) => `${m.text}${JSON.stringify(m.blocks ?? [])}`.includes(link)),
      'the PR link in the thread',
      90_000,
    );
    return { done, pull: pull! };
  };

  it('529 overloaded twice, then it works: the PR opens and the thread hears once that the model was overloaded', {
    timeout: 240_000,
  }, async () => {
    const { session, threadTs } = await mention('overloaded-case: add a changes file to');
    await expectPullRequest(session.id, threadTs);
    expect([seen.get('overloaded:0'), seen.get('overloaded:1')]).toEqual([3, 2]);
    const told = slack.thread(CHANNEL, threadTs).filter((m) => /model service is overloaded/.test(m.text));
    expect(told.map((m) => m.text)).toEqual([
      'The model service is overloaded right now (Anthropic is overloaded: Overloaded). I am waiting for it and will carry on where I was; nothing is lost.',
    ]);
    const waits = await app.store.events(session.id, { types: ['model-waiting'] });
    expect(waits.map((e) => e.event)).toEqual([
      {
        type: 'model-waiting',
        code: 'model_overloaded',
        message: 'Anthropic is overloaded: Overloaded',
        retryInMs: expect.any(Number),
      },
    ]);
    expect(anthropic.rejections).toEqual([]);
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });

  it('an answer cut mid-stream is retried; nothing is committed or pushed on the cut answer', {
    timeout: 240_000,
  }, async () => {
    const { session, threadTs } = await mention('cut-case: add a changes file to');
    const { done, pull } = await expectPullRequest(session.id, threadTs);
    // The final answer was asked twice: the cut one, then the whole one.
    expect(seen.get('cut:1')).toBe(2);
    expect(done.result?.summary).toBe(summary);
    const said = await app.store.events(session.id, { types: ['assistant-message', 'branch-pushed'] });
    expect(said.map((e) => e.event.type)).toEqual(['assistant-message', 'branch-pushed']);
    expect(said[0]!.event).toMatchObject({ text: summary });
    // One commit on the branch, made after the whole answer: its message and the PR carry it whole.
    const log = await git(hosted, 'log', '--format=%B%x00', `${done.branch}`, '--not', 'main');
    const messages = log
      .split('\0')
      .map((m) => m.trim())
      .filter(Boolean);
    expect(messages).toHaveLength(1);
    expect(pull.body).toContain(summary);
    expect(anthropic.rejections).toEqual([]);
    expect(github.refused).toEqual([]);
  });
});
