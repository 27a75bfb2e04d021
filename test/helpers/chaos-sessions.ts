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
import { installationCreatedEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startFakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi } from '../fakes/fake-slack-api.ts';
import { startFakeLinear } from '../fakes/linear/fake-linear.ts';
import { createRemote, git } from '../git/git-fixture.ts';
import { type Attribution, faultThatEnded } from './chaos-attribution.ts';
import {
  type ChaosFakes,
  type ChaosTask,
  chaosTask,
  endOfTask,
  GITHUB_WEBHOOK_SECRET,
  INSTALLATION,
  LINEAR_WEBHOOK_SECRET,
  OWNER,
  postsWhereAsked,
  repoName,
  SLACK_SIGNING_SECRET,
  slackChannel,
  type Surface,
  startTask,
} from './chaos-surfaces.ts';
import { passingVerdict } from './scripted-verifier.ts';
import { waitFor } from './wait-for.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SUMMARY = 'Added CHANGES.md with a line about this change.';

/** How one session ended, judged from the fakes' records (the services' side) and the store. */
export type SessionOutcome = {
  surface: Surface;
  task: string;
  sessionId: string;
  status: string;
  /** Why it stopped short (its error, else the reason it was paused with); null when it completed. */
  error: string | null;
  /** Empty when it ended correctly: completed, one PR, its link posted once, no duplicate post, comment or commit. */
  problems: string[];
  /** Posts, comments or activities where the session was asked that repeat one already there. */
  duplicatePosts: number;
  /** Commits on its branch past the one it was asked for (a push repeated as new work). */
  duplicatePushes: number;
  /** For a session with problems: the injected fault that ended it, if one did (chaos-attribution.ts). */
  endedBy?: Attribution;
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
 * Runs `sessions` sessions end to end, as `patchbay serve` runs them (environment-only config),
 * taking turns among the surfaces (chaos-surfaces.ts): a Slack mention, a mention on a GitHub
 * issue, a Linear issue delegated to the app, each ending in a GitHub pull request of its own
 * repository; MODEL_PROVIDER=anthropic against the loopback Messages API answering by the
 * request's content (write a file, then finish; the verifier passes). With `chaos`, the Anthropic,
 * GitHub, Slack and Linear fakes inject their transient faults at its rate. Everything started
 * here is stopped before it returns.
 */
export async function runChaosSessions(input: {
  sessions: number;
  chaos?: ChaosOptions;
  timeoutMs?: number;
  /** Which tasks to run (indexes into the surfaces' turn order), when not the first `sessions`. */
  tasks?: number[];
  /** A fresh database for Patchbay (`createTestDatabase` in a test), dropped by `close`. */
  database: () => Promise<{ url: string; close(): Promise<void> }>;
}): Promise<ChaosRun> {
  const tasks = (input.tasks ?? Array.from({ length: input.sessions }, (_, i) => i)).map(chaosTask);
  const chaos = input.chaos && createChaos(input.chaos);
  const withChaos = chaos ? { chaos } : {};
  const github = await startFakeGitHub(withChaos);
  const fakes: ChaosFakes = {
    github,
    slack: await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
      channels: tasks.map((t) => slackChannel(t.index)),
      ...withChaos,
    }),
    linear: await startFakeLinear(withChaos),
    commenter: github.addUser('alice'),
  };
  const anthropic = await startFakeAnthropic({ script: answer, chaosSubject: taskOf, ...withChaos });
  const upstream = await createRemote();
  for (const task of tasks)
    await fakes.github.addRepo(OWNER, task.repo, upstream.remote, INSTALLATION, { alice: 'write' });
  const database = await input.database();
  const dir = await mkdtemp(join(tmpdir(), 'patchbay-chaos-'));
  let app: Patchbay | undefined;
  try {
    app = await startApp({ fakes, anthropicUrl: anthropic.baseUrl, databaseUrl: database.url, dir });
    await announceInstallation(app, tasks);
    const started = Date.now();
    for (const task of tasks) await startTask(app, fakes, task);
    const outcomes: SessionOutcome[] = [];
    for (const task of tasks) {
      const ended = await endOfTask(app, task, input.timeoutMs ?? 300_000);
      const outcome = await judge({ session: ended, task, fakes, why: await whyItStopped(app, ended) });
      if (outcome.problems.length > 0 && chaos)
        outcome.endedBy = faultThatEnded({ ...task, error: outcome.error }, chaos.injected);
      outcomes.push(outcome);
    }
    const refused = [
      ...anthropic.rejections.map((r) => `anthropic: ${r}`),
      ...fakes.github.refused.map((r) => `github: ${r.status} ${r.method} ${r.path} ${r.message}`),
      ...fakes.slack.refused.map((r) => `slack: ${r.method} ${r.error}`),
      ...fakes.linear.refused.map((r) => `linear: ${r.status} ${r.operation} ${r.message}`),
    ];
    return { outcomes, injected: chaos?.injected ?? [], refused, wallMs: Date.now() - started };
  } finally {
    await app?.close();
    await database.close();
    await Promise.all([anthropic.close(), fakes.github.close(), fakes.slack.close(), fakes.linear.close()]);
    await upstream.cleanup();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The task a model request is about (`task-<i>` in what the requester wrote), for chaos's record. */
function taskOf(body: AnthropicRequest): string | undefined {
  return /\btask-\d+\b/.exec(JSON.stringify(body.messages))?.[0];
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

async function startApp(input: { fakes: ChaosFakes; anthropicUrl: string; databaseUrl: string; dir: string }) {
  const { github, slack, linear } = input.fakes;
  const config = loadConfig({
    DATA_DIR: join(input.dir, 'data'),
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
    SLACK_SIGNING_SECRET,
    SLACK_API_URL: slack.apiUrl,
    GITHUB_APP_ID: String(github.appId),
    GITHUB_APP_PRIVATE_KEY: github.privateKey,
    GITHUB_WEBHOOK_SECRET,
    GITHUB_API_URL: github.apiUrl,
    GITHUB_GIT_URL: github.gitUrl,
    LINEAR_ACCESS_TOKEN: linear.accessToken,
    LINEAR_WEBHOOK_SECRET,
    LINEAR_API_URL: linear.apiUrl,
  });
  return startPatchbay(config, {
    log: pino({ level: 'silent' }),
    serve: true,
    work: true,
    queue: { pollingIntervalSeconds: 0.5 },
    integrations: (context) => buildIntegrations(config, context),
  });
}

/** The GitHub App's installation of every repository, as GitHub announces it (Linear offers only those). */
async function announceInstallation(app: Patchbay, tasks: ChaosTask[]): Promise<void> {
  const repos = tasks.map((t) => ({ id: 500 + t.index, full_name: `${OWNER}/${repoName(t.index)}` }));
  const event = installationCreatedEvent(INSTALLATION, OWNER, repos);
  const sent = await sendWebhook(`${app.url}/github/webhooks`, GITHUB_WEBHOOK_SECRET, 'installation', event);
  if (sent.status !== 202) throw new Error(`the installation webhook was answered ${sent.status}`);
  const stored = async () =>
    (await app.database.db.selectFrom('github_installation_repos').selectAll().execute()).length;
  await waitFor(async () => (await stored()) === repos.length, 'the installation', 120_000);
}

/**
 * Why a session stopped short, in its own words: its error, else the reason of its last status
 * change (a paused run waits with no error), else what the model service last told it.
 */
async function whyItStopped(app: Patchbay, session: SessionRecord): Promise<string | null> {
  if (session.status === 'completed') return null;
  if (session.error) return session.error;
  const events = (await app.store.events(session.id)).map((e) => e.event);
  const status = events.findLast((e) => e.type === 'status-changed' && e.reason !== undefined);
  const model = events.findLast((e) => e.type === 'model-waiting');
  if (status?.type === 'status-changed' && status.reason) return status.reason;
  return model?.type === 'model-waiting' ? `model: ${model.message}` : null;
}

/** The task's outcome: its session, its pull request, the link where it was asked, duplicates. */
async function judge(input: {
  session: SessionRecord;
  task: ChaosTask;
  fakes: ChaosFakes;
  why: string | null;
}): Promise<SessionOutcome> {
  const { session, task, fakes, why } = input;
  const problems: string[] = [];
  if (session.status !== 'completed') problems.push(`ended ${session.status}: ${why ?? 'no reason given'}`);
  const pulls = fakes.github.pulls.filter((p) => p.repo === `${OWNER}/${task.repo}` && p.head === session.branch);
  if (pulls.length !== 1) problems.push(`${pulls.length} pull requests`);
  const pull = pulls[0];
  if (pull)
    problems.push(
      ...(await linkProblems(fakes, task, `${fakes.github.gitUrl}/${OWNER}/${task.repo}/pull/${pull.number}`)),
    );
  if (pull) {
    const bodies = fakes.github.commentsOn(OWNER, task.repo, pull.number).map((c) => c.body);
    if (new Set(bodies).size !== bodies.length) problems.push('a duplicate comment on the PR');
  }
  const identities = postsWhereAsked(fakes, task).map((p) => p.identity);
  const repeated = identities.filter((id, i) => identities.indexOf(id) !== i);
  if (repeated.length) problems.push(`posted twice where asked: ${repeated.join(' | ')}`);
  const commits = session.branch
    ? Number(
        await git(
          fakes.github.repo(OWNER, task.repo).gitDir,
          'rev-list',
          '--count',
          session.branch,
          '--not',
          'main',
        ).catch(() => '0'),
      )
    : 0;
  if (session.branch && commits !== 1) problems.push(`${commits} commits on the branch`);
  return {
    surface: task.surface,
    task: `task-${task.index}`,
    sessionId: session.id,
    status: session.status,
    error: why,
    problems,
    duplicatePosts: repeated.length,
    duplicatePushes: Math.max(0, commits - 1),
  };
}

/** The PR's link where the session was asked (the Slack thread, the comments, the agent session's activities): once. */
async function linkProblems(fakes: ChaosFakes, task: ChaosTask, link: string): Promise<string[]> {
  const posts = () => postsWhereAsked(fakes, task).filter((p) => p.outcome && p.shown.includes(link));
  const linked = () => posts().length;
  await waitFor(async () => linked() > 0, 'the PR link where it was asked', 60_000).catch(() => undefined);
  if (linked() === 1) return [];
  return [
    `the PR link posted ${linked()} times: ${posts()
      .map((p) => p.shown.slice(0, 160))
      .join(' | ')}`,
  ];
}
