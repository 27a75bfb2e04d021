import type { Logger } from 'pino';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';
import { waitsForSubtasks } from '../../src/core/subtask-wait.ts';
import { type ThreadRef, threadKey } from '../../src/core/thread-ref.ts';
import type { ThreadReplier, ThreadUpdate } from '../../src/core/thread-replier.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { GitHubClient } from './github-client.ts';
import { editComment } from './github-comments.ts';
import type { GitHubRequest, GitHubStore } from './github-store.ts';
import type { ProgressComments } from './progress-comments.ts';
import { type ProgressView, readBatch, renderProgress } from './render-progress.ts';
import { renderSubtasks } from './render-subtasks.ts';

/**
 * What the replier remembers of a thread between batches: the request it shows, what it saw last,
 * and the questions asked in the thread since the request that were not answered in it.
 */
type ReplyState = Pick<ProgressView, 'step' | 'blocked' | 'refused' | 'notices' | 'queue'> & {
  requestId?: number;
  questions?: { id: string; text: string }[];
};

/**
 * The outbound half for GitHub threads: each request (a mention, a review comment, the trigger
 * label) has one progress comment, made when the request was taken and edited in place here as
 * the run moves, until it ends with the summary and PR link, the agent's question, or the reason
 * it failed. Edits are idempotent, so a repeated batch only rewrites the same text. Between
 * events, `refresh` rewrites it when the session's sub-tasks moved on.
 */
export function createGitHubReplier(deps: {
  client: GitHubClient;
  store: GitHubStore;
  context: IntegrationContext<'github'>;
  /** Where the first progress comment of a request, posted by the interpreter's reply step, is awaited. */
  comments: ProgressComments;
  log: Logger;
}): ThreadReplier {
  const { client, store, context, comments } = deps;

  /** The request of the thread whose comment shows the session now; older ones are marked done. */
  async function currentRequest(thread: ThreadRef, sessionId: string): Promise<GitHubRequest | undefined> {
    const open = (await store.openRequests(threadKey(thread)!)).filter(
      (r) => r.sessionId === null || r.sessionId === sessionId,
    );
    // A request superseded by a newer one (an answer to the question it ended with) is done.
    for (const older of open.slice(0, -1)) await store.updateRequest(older.id, { finished: true });
    return open.at(-1);
  }

  /** Renders the request's comment and edits it when the text changed. */
  async function show(
    request: GitHubRequest,
    view: { session: SessionRecord; seen: ReplyState; prUrl?: string; children: readonly SubtaskLine[] },
    signal: AbortSignal,
  ): Promise<void> {
    const commentId = await comments.commentId(request, signal);
    const body = progressBody(view, pageUrlOf(context), (await client.identity()).mention);
    if (body === request.lastBody) return;
    const octokit = await client.forRepo({ owner: request.owner, repo: request.repo });
    await editComment(
      octokit,
      { owner: request.owner, repo: request.repo },
      { kind: request.commentKind, id: commentId },
      body,
      signal,
    );
    await store.updateRequest(request.id, { lastBody: body });
  }

  return {
    source: 'github',
    async reply({ session, thread, events, state, signal, children }: ThreadUpdate) {
      if (thread.source !== 'github') return { state };
      const request = await currentRequest(thread, session.id);
      if (!request) return { state };
      const fresh = (await context.sessions.get(session.id)) ?? session;
      const batch = readBatch(events, request.startSeq, fresh.status);
      const seen = seenAfter((state ?? {}) as ReplyState, request.id, batch);
      await show(request, { session: fresh, seen, ...(batch.prUrl && { prUrl: batch.prUrl }), children }, signal);
      // A session waiting for its sub-tasks goes on by itself: its comment keeps following it.
      if (batch.settled && !waitsForSubtasks(fresh, children))
        await store.updateRequest(request.id, { finished: true });
      return { state: seen };
    },

    /** Shows the sub-tasks as they stand now; the rest of the comment is as the last batch left it. */
    async refresh({ session, thread, state, signal, children }) {
      if (thread.source !== 'github') return { state };
      const request = await currentRequest(thread, session.id);
      const seen = (state ?? {}) as ReplyState;
      if (!request || seen.requestId !== request.id) return { state };
      await show(request, { session, seen, children }, signal);
      return { state };
    },
  };
}

/** The progress comment's text for what the thread has seen of the session. */
function progressBody(
  view: { session: SessionRecord; seen: ReplyState; prUrl?: string; children: readonly SubtaskLine[] },
  pageUrl: (sessionId: string) => string,
  mention: string,
): string {
  const { step, queue } = view.seen;
  const subtasks = renderSubtasks(view.children, { repo: view.session.repo, pageUrl });
  const subtaskQuestions = openSubtaskQuestions(view.seen.questions ?? [], view.children);
  return renderProgress({
    session: view.session,
    ...(step && { step }),
    ...(view.prUrl && { prUrl: view.prUrl }),
    ...refusalsOf(view.seen),
    ...(queue && { queue }),
    ...(subtasks && { subtasks }),
    ...(subtaskQuestions.length > 0 && { subtaskQuestions }),
    sessionUrl: pageUrl(view.session.id),
    mention,
  });
}

/** The hosts and repositories refused since the request, and what the thread was told before the pull request opened. */
function refusalsOf(seen: ReplyState): Pick<ProgressView, 'blocked' | 'refused' | 'notices'> {
  const { blocked, refused, notices } = seen;
  return {
    ...(blocked && blocked.length > 0 && { blocked }),
    ...(refused && refused.length > 0 && { refused }),
    ...(notices && notices.length > 0 && { notices }),
  };
}

/** What the thread has seen of its request after a batch: the batch's news, else what it saw before. */
function seenAfter(previous: ReplyState, requestId: number, batch: ReturnType<typeof readBatch>): ReplyState {
  const sameRequest = previous.requestId === requestId;
  const step = batch.step ?? (sameRequest ? previous.step : undefined);
  const blocked = [...new Set([...(sameRequest ? (previous.blocked ?? []) : []), ...batch.blocked])];
  const refused = [...new Set([...(sameRequest ? (previous.refused ?? []) : []), ...batch.refused])];
  const notices = [...new Set([...(sameRequest ? (previous.notices ?? []) : []), ...batch.notices])];
  const queue = batch.queue ?? (sameRequest ? previous.queue : undefined);
  const questions = [...(sameRequest ? (previous.questions ?? []) : []), ...batch.asked].filter(
    (q) => !batch.answered.includes(q.id),
  );
  return {
    requestId,
    ...(step && { step }),
    ...(blocked.length > 0 && { blocked }),
    ...(refused.length > 0 && { refused }),
    ...(notices.length > 0 && { notices }),
    ...(queue && { queue }),
    ...(questions.length > 0 && { questions }),
  };
}

/**
 * The questions sub-tasks asked in this thread that still wait: a child's question is relayed to
 * its parent's log as `<child id>:<question id>` (session-children.ts), and it is open while that
 * child waits. The child's answer is written in the child's log, so its status is what closes it here.
 */
function openSubtaskQuestions(asked: { id: string; text: string }[], children: readonly SubtaskLine[]): string[] {
  const waiting = children.filter((c) => c.status === 'waiting').map((c) => `${c.sessionId}:`);
  return asked.filter((q) => waiting.some((prefix) => q.id.startsWith(prefix))).map((q) => q.text);
}

function pageUrlOf(context: Pick<IntegrationContext, 'publicUrl'>): (sessionId: string) => string {
  return (sessionId) => `${context.publicUrl}/sessions/${sessionId}`;
}
