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
  truncate,
  type SlackText,
} from './slack-blocks.ts';
import { replyApproval } from './slack-approval-replies.ts';
import { replyEgress } from './slack-egress.ts';
import type { SlackWeb } from './slack-web.ts';
import { postOnce, type SlackPoster } from './slack-post-once.ts';
import type { ArtifactStore } from '../../src/core/artifact-store.ts';
import { uploadScreenshotsOnce, type SlackFiles } from './slack-screenshots.ts';
import { escapeMrkdwn } from './slack-text.ts';
import { branchLink } from './repo-links.ts';
import { repoShortName } from '../../src/core/repo-ref.ts';
import { statusIcon, subtaskLines } from './slack-subtasks.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';
import { waitsForSubtasks } from '../../src/core/subtask-wait.ts';
import type { SlackStore, SlackThread } from './slack-store.ts';
import {
  type FamilyMember,
  familyPulls,
  renderFamilyPulls,
  type SessionFamily,
} from '../../src/core/session-family.ts';
import { repoRefusedNotice } from '../../src/core/repo-access.ts';
import { modeNotice } from '../../src/core/session-mode.ts';

/** What we remember per thread between replies (besides the posts table). */
type ReplyState = { step?: string; statusText?: string; blocked?: string[] };

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
  const links: StatusLinks = { publicUrl: deps.publicUrl, repoBases: deps.repoBases ?? ['https://github.com'] };

  async function post(
    thread: SlackThread,
    posts: Map<string, string>,
    key: string,
    message: SlackText,
  ): Promise<string> {
    const existing = posts.get(key);
    if (existing) return existing;
    const inDoubt = await store.intendPost(thread, key);
    const ts = await postOnce({ poster: deps.poster ?? web, log: deps.log }, thread, key, message, inDoubt);
    await store.recordPost(thread, key, ts);
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
      const status = renderStatus({ session, step, nowMs: now(), blocked, children }, links);
      const statusTs = posts.get('status');
      if (!statusTs) await post(thread, posts, 'status', status);
      else if (status.text !== previous.statusText) await update(thread, statusTs, status);

      for (const stored of events) {
        const { event } = stored;
        if (event.type === 'question-asked') {
          await post(thread, posts, `question:${event.questionId}`, questionMessage(event));
        } else if (event.type === 'question-answered') {
          await replyAnswered({ update, store, thread, posts, events }, session, event);
        } else if (event.type === 'approval-requested' || event.type === 'approval-decided') {
          await replyApproval({ post, update, store, thread, posts, events }, event);
        } else if (event.type === 'egress-blocked' || event.type === 'egress-allowed') {
          await replyEgress({ post, update, store, thread, posts }, event);
        } else if (isPlainNotice(event)) {
          await post(thread, posts, ...plainNotice(event, stored.seq));
        } else if (event.type === 'ui-screenshots' && deps.screenshots) {
          await uploadScreenshotsOnce({ ...deps.screenshots, store, log: deps.log }, thread, posts, event);
        } else if (event.type === 'ci-failed') {
          await post(thread, posts, `ci:${stored.seq}`, ciMessage(event));
        } else if (event.type === 'status-changed' && TERMINAL.has(event.to)) {
          if (!posts.has(`final:${stored.seq}`))
            await post(thread, posts, `final:${stored.seq}`, await finalReply(deps, session, event, events));
        }
      }
      return { state: { step, statusText: status.text, ...(blocked.length > 0 && { blocked }) } satisfies ReplyState };
    },

    /** Keeps the elapsed time and the sub-tasks in the status message current between events. */
    async refresh({ session, thread, state, children }) {
      if (thread.source !== 'slack') return { state };
      const previous = (state ?? {}) as ReplyState;
      const statusTs = (await store.posts(thread)).get('status');
      if (!statusTs) return { state };
      const status = renderStatus(
        { session, step: previous.step ?? 'Working', nowMs: now(), blocked: previous.blocked ?? [], children },
        links,
      );
      if (status.text === previous.statusText) return { state };
      await update(thread, statusTs, status);
      return { state: { ...previous, statusText: status.text } satisfies ReplyState };
    },
  };
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

/**
 * For a parent that opened no pull request of its own (its sub-tasks were all on other
 * repositories): the ones its sub-tasks opened, in the same words. Undefined when there are none.
 */
function subtaskPullsText(session: SessionRecord, family: readonly FamilyMember[]): string | undefined {
  if (family[0]?.sessionId !== session.id) return undefined;
  const pulls = familyPulls(family);
  const first = pulls[0];
  if (!first) return undefined;
  return renderFamilyPulls(pulls, slackLink) ?? `Pull request: ${first.url}`;
}

/**
 * An answer (ask mode) as it is posted: its own message, not a quote under "Finished", with the
 * harness's Markdown file links as Slack links and everything else escaped.
 */
function answerText(answer: string): string {
  const parts = answer.trim().split(/(\[[^\]\n]+\]\(https?:\/\/[^)\s]+\))/);
  const text = parts
    .map((part) => {
      const link = /^\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)$/.exec(part);
      return link ? slackLink(link[2]!, escapeMrkdwn(link[1]!.replace(/\|/g, '/'))) : escapeMrkdwn(part);
    })
    .join('');
  return `:speech_balloon: ${truncate(text, 3500)}`;
}

function slackLink(url: string, text: string): string {
  return `<${url}|${text}>`;
}

/** "Pull request: <url>", or for a parent whose family opened more, every one of them. */
function pullsText(session: SessionRecord, prUrl: string, family: readonly FamilyMember[]): string {
  const parent = family[0]?.sessionId === session.id;
  const all = parent
    ? renderFamilyPulls(familyPulls(family, { sessionId: session.id, url: prUrl, repo: session.repo }), slackLink)
    : undefined;
  return all ?? `Pull request: ${prUrl}`;
}
