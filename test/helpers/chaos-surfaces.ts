import type { SessionRecord } from '../../src/core/session-record.ts';
import type { Patchbay } from '../../src/main.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import type { FakeSlackApi, SlackMessage } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import type { FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook } from '../fakes/linear/fake-linear-webhooks.ts';
import { engineering } from '../linear/linear-fixture.ts';
import { waitFor, waitForStatus } from './wait-for.ts';

/**
 * The three ways a session under chaos starts, and what each surface must show at its end: a
 * Slack mention in its own channel, a mention in a comment on a GitHub issue, a Linear issue
 * delegated to the app. Each session has its own repository (`octo-org/web-<i>`), its own channel
 * or issue, and its task named `task-<i>`, so every request a fake sees names one session.
 */
export type Surface = 'slack' | 'github' | 'linear';
export const surfaces: readonly Surface[] = ['slack', 'github', 'linear'];

export const OWNER = 'octo-org';
export const INSTALLATION = 77;
export const SLACK_SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
export const GITHUB_WEBHOOK_SECRET = 'chaos-webhook-secret';
export const LINEAR_WEBHOOK_SECRET = 'lin_wh_chaos-signing-secret';
const ISSUE_NUMBER = 1;
const LINEAR_CREATOR = { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' };

/** The fakes of a run, and the GitHub user (able to write to every repository) who mentions the app on issues. */
export type ChaosFakes = { github: FakeGitHub; slack: FakeSlackApi; linear: FakeLinear; commenter: GitHubUser };
type GitHubUser = ReturnType<FakeGitHub['addUser']>;

/** One session of the run: where it came from and the names that tell its requests apart. */
export type ChaosTask = {
  index: number;
  surface: Surface;
  repo: string;
  /** The Slack channel, GitHub repository or Linear agent session and issue its requests name. */
  subjects: string[];
};

export const taskName = (index: number) => `task-${index}`;
export const repoName = (index: number) => `web-${index}`;
export const slackChannel = (index: number) => `C0CHAOS${String(index).padStart(3, '0')}`;
const agentSessionId = (index: number) => `as-chaos-${index}`;
const linearIssueId = (index: number) => `issue-chaos-${index}`;

export function chaosTask(index: number): ChaosTask {
  const surface = surfaces[index % surfaces.length]!;
  const repo = repoName(index);
  const own = surface === 'slack' ? [slackChannel(index)] : surface === 'linear' ? linearNames(index) : [];
  return { index, surface, repo, subjects: [taskName(index), `${OWNER}/${repo}`, ...own] };
}

const linearNames = (index: number) => [agentSessionId(index), linearIssueId(index)];

/** Sends the request that starts `task` on its surface; throws when the surface's webhook is refused. */
export async function startTask(app: Patchbay, fakes: ChaosFakes, task: ChaosTask): Promise<void> {
  const words = `${taskName(task.index)}: add a changes file`;
  const url = `${fakes.github.gitUrl}/${OWNER}/${task.repo}`;
  if (task.surface === 'slack') return mentionOnSlack(app, task, `${words} to <${url}>`);
  if (task.surface === 'github') return mentionOnIssue(app, fakes, task, words);
  return delegateOnLinear(app, fakes.linear, task, `${words} to ${url}`);
}

async function mentionOnSlack(app: Patchbay, task: ChaosTask, text: string): Promise<void> {
  const event = appMention({ user: 'U0ALICE01', text, channel: slackChannel(task.index), ts: threadTs(task.index) });
  const signed = signBody(SLACK_SIGNING_SECRET, JSON.stringify(envelope(event)));
  const res = await fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body });
  if (res.status !== 200) throw new Error(`the Slack mention was answered ${res.status}`);
}

/** The mention's ts, which is its thread's: one a session, fixed so a run can be repeated. */
const threadTs = (index: number) => `1765000000.${String(index + 1).padStart(6, '0')}`;

async function mentionOnIssue(app: Patchbay, fakes: ChaosFakes, task: ChaosTask, words: string): Promise<void> {
  const { github, commenter } = fakes;
  const comment = github.addComment(OWNER, task.repo, ISSUE_NUMBER, commenter, `@patchbay-test ${words}`);
  const where = { owner: OWNER, repo: task.repo, installationId: INSTALLATION };
  const payload = issueCommentEvent(where, {
    number: ISSUE_NUMBER,
    title: `${taskName(task.index)}: a changes file`,
    body: 'We need a CHANGES.md.',
    commentId: comment.id,
    user: commenter,
    comment: comment.body,
  });
  const sent = await sendWebhook(`${app.url}/github/webhooks`, GITHUB_WEBHOOK_SECRET, 'issue_comment', payload);
  if (sent.status !== 202) throw new Error(`the GitHub mention was answered ${sent.status}`);
}

async function delegateOnLinear(app: Patchbay, linear: FakeLinear, task: ChaosTask, words: string): Promise<void> {
  if (!linear.teams.has(engineering.id)) linear.addTeam(structuredClone(engineering));
  const issue = linear.addIssue({
    id: linearIssueId(task.index),
    identifier: `ENG-${task.index}`,
    title: `${taskName(task.index)}: a changes file`,
    description: words,
    teamId: engineering.id,
    stateId: 'st-todo',
    delegateId: linear.appUserId,
  });
  const created = agentSessionCreated(linear, {
    agentSessionId: agentSessionId(task.index),
    issue,
    creator: LINEAR_CREATOR,
  });
  const sent = await sendLinearWebhook(`${app.url}/linear/webhooks`, LINEAR_WEBHOOK_SECRET, created);
  if (sent.status !== 200) throw new Error(`the Linear delegation was answered ${sent.status}`);
}

/** The task's session once it has ended (or is waiting on someone). */
export async function endOfTask(app: Patchbay, task: ChaosTask, timeoutMs: number): Promise<SessionRecord> {
  const session = await waitFor(() => app.store.findByThread(threadOf(task)), 'the session', timeoutMs);
  return waitForStatus(app, session.id, ['completed', 'failed', 'cancelled', 'waiting'], timeoutMs);
}

function threadOf(task: ChaosTask) {
  if (task.surface === 'slack')
    return {
      source: 'slack',
      teamId: TEAM,
      channel: slackChannel(task.index),
      threadTs: threadTs(task.index),
    } as const;
  if (task.surface === 'github')
    return { source: 'github', owner: OWNER, repo: task.repo, number: ISSUE_NUMBER, kind: 'issue' } as const;
  return { source: 'linear', agentSessionId: agentSessionId(task.index), issueId: linearIssueId(task.index) } as const;
}

export type Post = { identity: string; shown: string; outcome: boolean };

/**
 * What the requester sees where they asked: each message, comment or activity as a reader sees it,
 * and whether it reports the outcome (on Linear only the response does: the PR's link also appears
 * in a progress thought when the PR opens, by design).
 */
export function postsWhereAsked(fakes: ChaosFakes, task: ChaosTask): Post[] {
  if (task.surface === 'slack')
    return fakes.slack.thread(slackChannel(task.index), threadTs(task.index)).map(slackPost);
  // GitHub: one mention has one bot comment, its progress comment, edited to the end (its hidden
  // marker goes with the first edit, so a second comment is told by being there at all).
  if (task.surface === 'github')
    return fakes.github
      .commentsOn(OWNER, task.repo, ISSUE_NUMBER)
      .filter((c) => c.user.login === fakes.github.bot.login)
      .map((c) => ({ identity: 'the progress comment', shown: c.body, outcome: true }));
  return fakes.linear
    .activitiesOf(agentSessionId(task.index))
    .filter((a) => a.ephemeral !== true)
    .map((a) => {
      const shown = JSON.stringify(a.content);
      return { identity: shown, shown, outcome: a.content.type === 'response' || a.content.type === 'error' };
    });
}

/** Slack: the post key a sender marks a post with (an edited message keeps it), else its text. */
function slackPost(m: SlackMessage): Post {
  const shown = `${m.text}${JSON.stringify(m.blocks ?? [])}`;
  const key = m.metadata?.event_payload.key;
  return { identity: typeof key === 'string' ? `post key ${key}` : shown.slice(0, 80), shown, outcome: true };
}
