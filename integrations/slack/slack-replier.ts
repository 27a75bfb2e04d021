import type { Logger } from 'pino';
import { describeToolCall } from '../../src/core/tool-call.ts';
import type { ThreadReplier, ThreadUpdate } from '../../src/core/thread-replier.ts';
import { describeEgressBlock, egressBlockedNote } from '../../src/core/egress-block.ts';
import { modelWaitNotice } from '../../src/core/model-notice.ts';
import { queueNotice } from '../../src/core/queue-notice.ts';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import {
  answeredMessage,
  formatElapsed,
  questionMessage,
  statusMessage,
  type SlackText,
  truncate,
} from './slack-blocks.ts';
import { replyApproval } from './slack-approval-replies.ts';
import { replyEgress } from './slack-egress.ts';
import type { SlackWeb } from './slack-web.ts';
import { postRecorded, type SlackPoster } from './slack-post-once.ts';
import type { ArtifactStore } from '../../src/core/artifact-store.ts';
import { uploadScreenshotsOnce, type SlackFiles } from './slack-screenshots.ts';
import { escapeMrkdwn } from './slack-text.ts';
import { repoShortName } from '../../src/core/repo-ref.ts';
import { statusIcon, subtaskLines } from './slack-subtasks.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';
import { waitsForSubtasks } from '../../src/core/subtask-wait.ts';
import type { SlackStore, SlackThread } from './slack-store.ts';
import type { FamilyMember, SessionFamily } from '../../src/core/session-family.ts';
import { repoRefusedNotice } from '../../src/core/repo-access.ts';
import { modeNotice } from '../../src/core/session-mode.ts';
import { type AgentState, finishAgentReply, syncAgentSurface } from './slack-agent-replies.ts';
import { SlackAgentSurface } from './slack-agent-surface.ts';
import { answerText, pullsText, subtaskPullsText } from './slack-pull-links.ts';
import { branchLink } from './repo-links.ts';

/** What we remember per thread between replies (besides the posts table). */
type ReplyState = { step?: string; statusText?: string; blocked?: string[]; agent?: AgentState };

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** How a host is allowed from a Slack thread, for the status message's note. */
const SLACK_HOW_TO_ALLOW = 'allow it for this session or this repository with its buttons below';

/**
 * Slack's outbound half. One status message per thread, edited in place with the current step and
 * elapsed time; each question as its own message with buttons; one final reply per finished run with
 * the PR or pushed branch and the summary, or why it failed or stopped. Every post is recorded in
 * slack_posts under its purpose before the next one, so a repeated batch edits instead of reposting;
 * its intent is recorded before it is made, so one a crash or a lost answer left in doubt is looked
 * for in the thread first (postOnce).
 */
export function createSlackReplier(deps: {
  web: SlackWeb;
  /** Posts with no SDK retries and rate limits rejected (see postOnce); `web` when absent. */
  poster?: SlackPoster;
  store: SlackStore;
  publicUrl: string;
  log: Logger;
  now?: () => number /** Git hosts whose repositories have web pages to link (github.com, GitHub Enterprise). */;
  repoBases?: readonly string[];
  /** Where a UI change's before/after screenshots are read to upload them (with `files:write`). */
  screenshots?: { web: SlackFiles; artifacts: Pick<ArtifactStore, 'get'> };
  /** A parent session's family: its final reply lists every pull request the family opened. */
  family?: SessionFamily;
}): ThreadReplier {
  const { web, store } = deps;
  const now = deps.now ?? Date.now;
  const surface = new SlackAgentSurface({ web, log: deps.log });
  const links: StatusLinks = { publicUrl: deps.publicUrl, repoBases: deps.repoBases ?? ['https://github.com'] };

  async function post(
    thread: SlackThread,
    posts: Map<string, string>,
    key: string,
    message: SlackText,
  ): Promise<string> {
    const existing = posts.get(key);
    if (existing) return existing;
    const ts = await postRecorded({ poster: deps.poster ?? web, store, log: deps.log }, thread, key, message);
    posts.set(key, ts);
    return ts;
  }

  async function update(thread: SlackThread, ts: string, message: SlackText): Promise<void> {
    await web.chat.update({ channel: thread.channel, ts, text: message.text, blocks: (message.blocks ?? []) as never });
  }

  return {
    source: 'slack',
    async reply({ session, thread, events, state, children }: ThreadUpdate) {
      if (thread.source !== 'slack') return { state };
      const previous = (state ?? {}) as ReplyState;
      const posts = await store.posts(thread);

      let step = previous.step ?? 'Queued';
      for (const stored of events) step = stepAfter(stored, step);
      const blocked = blockedAfter(previous.blocked ?? [], events);
      const agent = await syncAgentSurface(surface, { thread, session, step, events, now: now() }, previous.agent);
      const view = { session, step, nowMs: now(), blocked, children, nativeStop: agent?.nativeStop === true };
      const status = renderStatus(view, links);
      const statusTs = posts.get('status');
      if (!statusTs) await post(thread, posts, 'status', status);
      else if (status.text !== previous.statusText) await update(thread, statusTs, status);
      const ctx = { deps, surface, agent, post, update, store, thread, posts, events };
      for (const stored of events) await replyToEvent(ctx, session, stored);
      const kept = { step, statusText: status.text, ...(blocked.length > 0 && { blocked }), ...(agent && { agent }) };
      return { state: kept satisfies ReplyState };
    },

    /** Keeps the elapsed time and the sub-tasks in the status message current between events. */
    async refresh({ session, thread, state, children }) {
      if (thread.source !== 'slack') return { state };
      const previous = (state ?? {}) as ReplyState;
      const statusTs = (await store.posts(thread)).get('status');
      if (!statusTs) return { state };
      const step = previous.step ?? 'Working';
      // Slack clears a status line after two minutes without a message: it is set again.
      const agent = await syncAgentSurface(surface, { thread, session, step, events: [], now: now() }, previous.agent);
      const nativeStop = agent?.nativeStop === true;
      const status = renderStatus(
        { session, step, nowMs: now(), blocked: previous.blocked ?? [], children, nativeStop },
        links,
      );
      if (status.text === previous.statusText) return { state: { ...previous, ...(agent && { agent }) } };
      await update(thread, statusTs, status);
      return { state: { ...previous, statusText: status.text, ...(agent && { agent }) } satisfies ReplyState };
    },
  };
}

/** What one event's replies need: the replier's posting, the thread's posts and agent surface. */
type EventReplies = {
  deps: Parameters<typeof createSlackReplier>[0];
  surface: SlackAgentSurface;
  agent: AgentState | undefined;
  post(thread: SlackThread, posts: Map<string, string>, key: string, message: SlackText): Promise<string>;
  update(thread: SlackThread, ts: string, message: SlackText): Promise<void>;
  store: SlackStore;
  thread: SlackThread;
  posts: Map<string, string>;
  events: StoredEvent[];
};

/** The thread's messages for one event: a question, an answer, an approval, a notice, the final reply. */
async function replyToEvent(ctx: EventReplies, session: SessionRecord, stored: StoredEvent): Promise<void> {
  const { deps, thread, posts, post, events } = ctx;
  const { event } = stored;
  if (event.type === 'question-asked') {
    await post(thread, posts, `question:${event.questionId}`, questionMessage(event));
  } else if (event.type === 'question-answered') {
    await replyAnswered(ctx, session, event);
  } else if (event.type === 'approval-requested' || event.type === 'approval-decided') {
    await replyApproval(ctx, event);
  } else if (event.type === 'egress-blocked' || event.type === 'egress-allowed') {
    await replyEgress(ctx, event);
  } else if (isPlainNotice(event)) {
    await post(thread, posts, ...plainNotice(event, stored.seq));
  } else if (event.type === 'ui-screenshots' && deps.screenshots) {
    await uploadScreenshotsOnce({ ...deps.screenshots, store: ctx.store, log: deps.log }, thread, posts, event);
  } else if (event.type === 'ci-failed') {
    await post(thread, posts, `ci:${stored.seq}`, ciMessage(event));
  } else if (event.type === 'status-changed' && TERMINAL.has(event.to) && !posts.has(`final:${stored.seq}`)) {
    const final = await finalReply(deps, session, event, events);
    // Streamed where Slack offers its agent surface; posted where it does not.
    const streamed = await finishAgentReply(ctx.surface, thread, ctx.agent, final.text);
    if (streamed) await ctx.store.recordPost(thread, `final:${stored.seq}`, streamed);
    if (streamed) posts.set(`final:${stored.seq}`, streamed);
    else await post(thread, posts, `final:${stored.seq}`, final);
  }
}

/** An answered question's message edited so its buttons give way to who answered what (once). */
async function replyAnswered(
  deps: {
    update(thread: SlackThread, ts: string, message: SlackText): Promise<void>;
    store: Pick<SlackStore, 'recordPost'>;
    thread: SlackThread;
    posts: Map<string, string>;
    events: readonly StoredEvent[];
  },
  session: SessionRecord,
  event: EventOf<'question-answered'>,
): Promise<void> {
  const { thread, posts } = deps;
  const questionTs = posts.get(`question:${event.questionId}`);
  const asked = deps.events.find((e) => e.event.type === 'question-asked' && e.event.questionId === event.questionId)
    ?.event as EventOf<'question-asked'> | undefined;
  const question = asked?.question ?? session.pendingQuestion?.question ?? 'Question';
  if (!questionTs || posts.has(`answered:${event.questionId}`)) return;
  await deps.update(thread, questionTs, answeredMessage(question, event.actor.name, event.text));
  await deps.store.recordPost(thread, `answered:${event.questionId}`, questionTs);
  posts.set(`answered:${event.questionId}`, questionTs);
}

/** The status line's step after an event. */
function stepAfter(stored: StoredEvent, step: string): string {
  const { event } = stored;
  switch (event.type) {
    case 'status-changed':
      if (event.to === 'running') return 'Starting';
      if (event.to === 'waiting') return 'Waiting for an answer';
      if (event.to === 'queued') return 'Queued';
      return { completed: 'Done', failed: 'Failed', cancelled: 'Stopped' }[event.to as string] ?? step;
    case 'workspace-ready':
      return `Checked out \`${event.baseBranch}\` into \`${event.branch}\``;
    case 'mode-chosen':
      return event.mode === 'ask' ? 'Reading the code to answer (nothing is changed)' : 'Working on the change';
    case 'tool-start':
      return `Running \`${event.name}\`${describeInput(event.name, event.input)}`;
    case 'assistant-message':
      return 'Thinking';
    case 'user-message':
      return `Read a message from ${escapeMrkdwn(event.actor.name)}`;
    case 'diff-updated':
      return `Committed ${event.filesChanged} changed file${event.filesChanged === 1 ? '' : 's'}`;
    case 'branch-pushed':
      return `Pushed \`${event.branch}\``;
    case 'pr-opened':
      return `Opened pull request #${event.number}`;
    case 'model-waiting':
      return 'Waiting for the model service';
    case 'queue-waiting':
      return event.ahead === 0 ? 'Queued: next in line' : `Queued: ${event.ahead} ahead`;
    default:
      return step;
  }
}

type PlainNotice = EventOf<
  'queue-waiting' | 'queue-started' | 'repo-refused' | 'model-waiting' | 'publish-notice' | 'mode-chosen'
>;

/** Events the thread hears as a message of their own: where it stands in line, a repository refused to it, the model service down. */
function isPlainNotice(event: StoredEvent['event']): event is PlainNotice {
  return (
    event.type === 'queue-waiting' ||
    event.type === 'queue-started' ||
    event.type === 'repo-refused' ||
    event.type === 'model-waiting' ||
    event.type === 'publish-notice' ||
    event.type === 'mode-chosen'
  );
}

/** A plain notice's post: its key (once per event) and its text. */
function plainNotice(event: PlainNotice, seq: number): [string, SlackText] {
  if (event.type === 'repo-refused') return [`refused:${seq}`, { text: `⊘ ${repoRefusedNotice(event)}` }];
  if (event.type === 'model-waiting') return [`model-waiting:${seq}`, { text: modelWaitNotice(event) }];
  if (event.type === 'publish-notice') return [`publish-notice:${seq}`, { text: `ⓘ ${event.text}` }];
  if (event.type === 'mode-chosen') return [`mode:${seq}`, { text: `ⓘ ${escapeMrkdwn(modeNotice(event))}` }];
  return [`queue:${seq}`, { text: queueNotice(event) }];
}

function describeInput(name: string, input: unknown): string {
  const { detail } = describeToolCall(name, input, { maxDetail: 60 });
  return detail ? `: \`${escapeMrkdwn(detail.replace(/`/g, "'"))}\`` : '';
}

/** The refused hosts shown in the status message: those seen before plus this batch's egress-blocked events. */
function blockedAfter(previous: string[], events: StoredEvent[]): string[] {
  const blocked = [...previous];
  for (const { event } of events) {
    if (event.type !== 'egress-blocked') continue;
    const text = describeEgressBlock(event);
    if (!blocked.includes(text)) blocked.push(text);
  }
  return blocked;
}

/** Where the status message links to: the session pages, and the repositories' hosts for branch links. */
type StatusLinks = { publicUrl: string; repoBases: readonly string[] };

/** What the status message shows: the session, its current step, refused hosts and its sub-tasks. */
type StatusView = {
  session: SessionRecord;
  step: string;
  nowMs: number;
  blocked: string[];
  children: readonly SubtaskLine[];
  /** Slack's own Stop button is there (agent surface): the message then shows none of its own. */
  nativeStop?: boolean;
};

function renderStatus(view: StatusView, links: StatusLinks): SlackText {
  const { session } = view;
  const done = TERMINAL.has(session.status);
  const end = done ? Date.parse(session.updatedAt) : view.nowMs;
  const subtasks = subtaskLines(view.children, session, links);
  const fannedOut = waitsForSubtasks(session, view.children);
  const step = fannedOut ? 'Waiting for its sub-tasks' : view.step;
  return statusMessage({
    repo: repoShortName(session.repo),
    step: done ? { completed: 'Done', failed: 'Failed', cancelled: 'Stopped' }[session.status as string]! : step,
    elapsed: formatElapsed(end - Date.parse(session.createdAt)),
    link: `${links.publicUrl}/sessions/${session.id}`,
    active: !done,
    stop: !done && !view.nativeStop,
    icon: fannedOut ? statusIcon('running') : statusIcon(session.status),
    ...(view.blocked.length > 0 && { note: escapeMrkdwn(egressBlockedNote(view.blocked, SLACK_HOW_TO_ALLOW)!) }),
    ...(subtasks && { subtasks }),
  });
}

/** CI failed on the session's pull request: the follow-up it started, or why there is none. */
function ciMessage(event: EventOf<'ci-failed'>): SlackText {
  const what = `CI failed on pull request #${event.pullNumber} at \`${event.commit.slice(0, 12)}\`: ${escapeMrkdwn(event.name)}${event.url ? ` (<${event.url}|details>)` : ''}.`;
  return {
    text: event.followUp
      ? `:wrench: ${what} Working on a fix.`
      : `:warning: ${what} I am not fixing it automatically: ${escapeMrkdwn(event.reason ?? 'no reason given')}.`,
  };
}

/** The final reply; the family's pull requests are read for a completed run only. */
async function finalReply(
  deps: { family?: SessionFamily; repoBases?: readonly string[] },
  session: SessionRecord,
  change: EventOf<'status-changed'>,
  events: StoredEvent[],
): Promise<SlackText> {
  const family = change.to === 'completed' && deps.family ? await deps.family.family(session.id) : [];
  return finalMessage(session, change, events, deps.repoBases ?? ['https://github.com'], family);
}

/**
 * The reply that ends a run: the PR, or the pushed branch, with the summary; or the reason it failed
 * or stopped. A parent whose family opened several PRs (one per repository) lists them all in it.
 */
function finalMessage(
  session: SessionRecord,
  change: EventOf<'status-changed'>,
  events: StoredEvent[],
  repoBases: readonly string[],
  family: readonly FamilyMember[],
): SlackText {
  if (change.to === 'failed')
    return { text: `:x: The run failed: ${escapeMrkdwn(change.reason ?? session.error ?? 'unknown error')}` };
  if (change.to === 'cancelled')
    return { text: `:octagonal_sign: Stopped: ${escapeMrkdwn(change.reason ?? 'the run was stopped')}.` };
  const pr = [...events].reverse().find((e) => e.event.type === 'pr-opened')?.event as EventOf<'pr-opened'> | undefined;
  const pushed = [...events].reverse().find((e) => e.event.type === 'branch-pushed')?.event as
    | EventOf<'branch-pushed'>
    | undefined;
  const result = session.result ?? {};
  const summary = result.summary?.trim()
    ? `\n>${escapeMrkdwn(truncate(result.summary.trim(), 1500)).replace(/\n/g, '\n>')}`
    : '';
  if (result.answered) return { text: answerText(result.summary ?? '') };
  // A denied push (autonomy ask-before-push): the work is not on any branch the thread can open.
  if (result.unpushed) return { text: `:no_entry: ${escapeMrkdwn(result.unpushed)}` };
  const prUrl = pr?.url ?? result.prUrl;
  if (prUrl) return { text: `:white_check_mark: ${pullsText(session, prUrl, family)}${summary}` };
  const branch = pushed?.branch ?? (result.commit ? result.branch : undefined);
  const commit = pushed?.commit ?? result.commit;
  const subtaskPulls = subtaskPullsText(session, family);
  if (branch)
    return {
      text: `:white_check_mark: Pushed branch ${branchLink(session.repo, branch, repoBases)}${commit ? ` (${commit.slice(0, 12)})` : ''}${subtaskPulls ? `\n${subtaskPulls}` : ''}${summary}`,
    };
  return { text: `:white_check_mark: ${subtaskPulls ?? 'Finished with no changes to commit.'}${summary}` };
}
