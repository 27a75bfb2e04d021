import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { type ChaosOptions, createChaos, type InjectedFault } from '../fakes/chaos.ts';
import { type AnthropicReply, type AnthropicRequest, startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import { type FakeGitHub, startFakeGitHub } from '../fakes/fake-github.ts';
import { type FakeSlackApi, type SlackMessage, startFakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, git } from '../git/git-fixture.ts';
import { passingVerdict } from './scripted-verifier.ts';
import { waitFor, waitForStatus } from './wait-for.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const OWNER = 'octo-org';
const SUMMARY = 'Added CHANGES.md with a line about this change.';

/** How one session ended, judged from the fakes' records (the services' side) and the store. */
export type SessionOutcome = {
  sessionId: string;
  status: string;
  error: string | null;
  /** Empty when it ended correctly: completed, one PR, its link posted once, no duplicate post, comment or commit. */
  problems: string[];
};

export type ChaosRun = {
  outcomes: SessionOutcome[];
  /** Faults the fakes injected (empty without chaos). */
  injected: InjectedFault[];
  /** What the fakes refused as malformed: a product bug, never a fault of chaos. */
  refused: string[];
  wallMs: number;
};

/**
 * Runs `sessions` sessions end to end, as `patchbay serve` runs them (environment-only config):
 * Slack mentions in, a GitHub pull request out, MODEL_PROVIDER=anthropic against the loopback
 * Messages API answering by the request's content (write a file, then finish; the verifier
 * passes). With `chaos`, the Anthropic, GitHub and Slack fakes inject their transient faults at
 * its rate. Everything started here is stopped before it returns.
 */
export async function runChaosSessions(input: {
  sessions: number;
  chaos?: ChaosOptions;
  timeoutMs?: number;
  /** A fresh database for Patchbay (`createTestDatabase` in a test), dropped by `close`. */
  database: () => Promise<{ url: string; close(): Promise<void> }>;
}): Promise<ChaosRun> {
  const chaos = input.chaos && createChaos(input.chaos);
  const withChaos = chaos ? { chaos } : {};
  const github = await startFakeGitHub(withChaos);
  const slack = await startFakeSlackApi({
    botToken: BOT_TOKEN,
    users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    ...withChaos,
  });
  const anthropic = await startFakeAnthropic({ script: answer, ...withChaos });
  const upstream = await createRemote();
  const hosted = (await github.addRepo(OWNER, 'web', upstream.remote, 77)).gitDir;
  const database = await input.database();
  const dir = await mkdtemp(join(tmpdir(), 'patchbay-chaos-'));
  let app: Patchbay | undefined;
  try {
    app = await startApp({ github, slack, anthropicUrl: anthropic.baseUrl, databaseUrl: database.url, dir });
    const started = Date.now();
    const host = new URL(github.gitUrl).host;
    const threads: string[] = [];
    for (let i = 0; i < input.sessions; i++) threads.push(await mention(app, `task ${i}: add a changes file to`, host));
    const outcomes: SessionOutcome[] = [];
    for (const threadTs of threads) {
      const ended = await endOf(app, threadTs, input.timeoutMs ?? 300_000);
      outcomes.push(await judge({ session: ended, threadTs, github, slack, hosted }));
    }
    const refused = [
      ...anthropic.rejections.map((r) => `anthropic: ${r}`),
      ...github.refused.map((r) => `github: ${r.status} ${r.method} ${r.path} ${r.message}`),
      ...slack.refused.map((r) => `slack: ${r.method} ${r.error}`),
    ];
    return { outcomes, injected: chaos?.injected ?? [], refused, wallMs: Date.now() - started };
  } finally {
    await app?.close();
    await database.close();
    await Promise.all([anthropic.close(), github.close(), slack.close()]);
    await upstream.cleanup();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The model, by the request's content: a file written at the first turn, a summary at the next; a forced verdict passes. */
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
  return { content: [{ type: 'text', text: SUMMARY }] };
}

async function startApp(input: {
  github: FakeGitHub;
  slack: FakeSlackApi;
  anthropicUrl: string;
  databaseUrl: string;
  dir: string;
}): Promise<Patchbay> {
  const { github, slack, dir } = input;
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    DATABASE_URL: input.databaseUrl,
    PORT: '0',
    PUBLIC_URL: 'http://patchbay.test',
    LOG_LEVEL: 'silent',
    SANDBOX_EGRESS_ALLOW: 'none',
    MODEL_PROVIDER: 'anthropic',
    MODEL: 'claude-sonnet-4-6',
    ANTHROPIC_API_KEY: 'test-anthropic-key',
    ANTHROPIC_BASE_URL: input.anthropicUrl,
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: slack.apiUrl,
    GITHUB_APP_ID: String(github.appId),
    GITHUB_APP_PRIVATE_KEY: github.privateKey,
    GITHUB_WEBHOOK_SECRET: 'chaos-webhook-secret',
    GITHUB_API_URL: github.apiUrl,
    GITHUB_GIT_URL: github.gitUrl,
  });
  return startPatchbay(config, {
    log: pino({ level: 'silent' }),
    serve: true,
    work: true,
    queue: { pollingIntervalSeconds: 0.5 },
    integrations: (context) => buildIntegrations(config, context),
  });
}

/** A signed app_mention naming the repository; its thread's ts once Slack's request is acked. */
async function mention(app: Patchbay, words: string, host: string): Promise<string> {
  const event = appMention({ user: 'U0ALICE01', text: `${words} <https://${host}/${OWNER}/web>` });
  const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(event)));
  const res = await fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body });
  if (res.status !== 200) throw new Error(`the mention was answered ${res.status}`);
  return event.ts;
}

/** The thread's session once it has ended (or is waiting on someone). */
async function endOf(app: Patchbay, threadTs: string, timeoutMs: number): Promise<SessionRecord> {
  const session = await waitFor(
    () => app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs }),
    'the session',
  );
  return waitForStatus(app, session.id, ['completed', 'failed', 'cancelled', 'waiting'], timeoutMs);
}

/** A Slack message as a reader sees it: its text and its blocks. */
const shown = (m: { text: string; blocks?: unknown[] }) => `${m.text}${JSON.stringify(m.blocks ?? [])}`;

/**
 * Messages posted twice: two carrying the same post key in their message metadata (the key a
 * post's sender marks it with, which an edited message keeps), or two unmarked ones alike.
 */
function duplicatePosts(thread: SlackMessage[]): string[] {
  const identities = thread.map((m) => {
    const key = m.metadata?.event_payload.key;
    return typeof key === 'string' ? `post key ${key}` : shown(m).slice(0, 80);
  });
  return identities.filter((id, i) => identities.indexOf(id) !== i);
}

async function judge(input: {
  session: SessionRecord;
  threadTs: string;
  github: FakeGitHub;
  slack: FakeSlackApi;
  hosted: string;
}): Promise<SessionOutcome> {
  const { session, github, slack } = input;
  const problems: string[] = [];
  if (session.status !== 'completed') problems.push(`ended ${session.status}: ${session.error ?? 'no error'}`);
  const pulls = github.pulls.filter((p) => p.head === session.branch);
  if (pulls.length !== 1) problems.push(`${pulls.length} pull requests`);
  const pull = pulls[0];
  if (pull) {
    const link = `${github.gitUrl}/${OWNER}/web/pull/${pull.number}`;
    const posted = () => slack.thread(CHANNEL, input.threadTs).some((m) => shown(m).includes(link));
    await waitFor(async () => posted(), 'the PR link in the thread', 60_000).catch(() => undefined);
    const linked = slack.thread(CHANNEL, input.threadTs).filter((m) => shown(m).includes(link)).length;
    if (linked !== 1) problems.push(`the PR link posted ${linked} times`);
    const bodies = github.commentsOn(OWNER, 'web', pull.number).map((c) => c.body);
    if (new Set(bodies).size !== bodies.length) problems.push('a duplicate comment on the PR');
  }
  const duplicates = duplicatePosts(slack.thread(CHANNEL, input.threadTs));
  if (duplicates.length) problems.push(`posted twice in the thread: ${duplicates.join(' | ')}`);
  if (session.branch) {
    const commits = await git(input.hosted, 'rev-list', '--count', session.branch, '--not', 'main').catch(() => '0');
    if (commits !== '1') problems.push(`${commits} commits on the branch`);
  }
  return { sessionId: session.id, status: session.status, error: session.error ?? null, problems };
}
