import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import { threadKey } from '../../src/core/thread-ref.ts';
import type { ThreadReplier, ThreadUpdate } from '../../src/core/thread-replier.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { GitHubClient } from './github-client.ts';
import { editComment } from './github-comments.ts';
import type { GitHubRequest, GitHubStore } from './github-store.ts';
import { readBatch, renderProgress } from './render-progress.ts';

/**
 * The outbound half for GitHub threads: each request (a mention, a review comment, the trigger
 * label) has one progress comment, made when the request was taken and edited in place here as
 * the run moves, until it ends with the summary and PR link, the agent's question, or the reason
 * it failed. Edits are idempotent, so a repeated batch only rewrites the same text.
 */
export function createGitHubReplier(deps: {
  client: GitHubClient;
  store: GitHubStore;
  context: IntegrationContext;
  log: Logger;
}): ThreadReplier {
  const { client, store, context } = deps;

  // The webhook worker posts the progress comment just after the hand-off (writes are throttled to
  // one a second); wait for it briefly, then leave the batch for the notifier's retry.
  async function withComment(request: GitHubRequest, signal: AbortSignal): Promise<GitHubRequest> {
    for (let waited = 0; request.commentId === null; waited += 200) {
      if (waited >= 10_000 || signal.aborted)
        throw new PatchbayError('conflict', 'the progress comment is not posted yet', { retryable: true });
      await new Promise((resolve) => setTimeout(resolve, 200));
      request = (await store.openRequests(request.threadKey)).find((r) => r.id === request.id) ?? request;
    }
    return request;
  }

  return {
    source: 'github',
    async reply({ session, thread, events, state, signal }: ThreadUpdate) {
      if (thread.source !== 'github') return { state };
      const open = (await store.openRequests(threadKey(thread)!)).filter(
        (r) => r.sessionId === null || r.sessionId === session.id,
      );
      if (open.length === 0) return { state };
      // A request superseded by a newer one (an answer to the question it ended with) is done.
      for (const older of open.slice(0, -1)) await store.updateRequest(older.id, { finished: true });
      const request = await withComment(open.at(-1)!, signal);
      const fresh = (await context.getSession(session.id)) ?? session;
      const batch = readBatch(events, request.startSeq, fresh.status);
      const bot = await client.identity();
      const previous = (state ?? {}) as {
        step?: { name: string; input: unknown };
        requestId?: number;
        blocked?: string[];
        queue?: string;
      };
      const sameRequest = previous.requestId === request.id;
      const step = batch.step ?? (sameRequest ? previous.step : undefined);
      const blocked = [...new Set([...(sameRequest ? (previous.blocked ?? []) : []), ...batch.blocked])];
      const queue = batch.queue ?? (sameRequest ? previous.queue : undefined);
      const body = renderProgress({
        session: fresh,
        ...(step && { step }),
        ...(batch.prUrl && { prUrl: batch.prUrl }),
        ...(blocked.length > 0 && { blocked }),
        ...(queue && { queue }),
        sessionUrl: `${context.publicUrl}/sessions/${session.id}`,
        mention: bot.mention,
      });
      if (body !== request.lastBody) {
        const octokit = await client.forRepo({ owner: request.owner, repo: request.repo });
        await editComment(
          octokit,
          { owner: request.owner, repo: request.repo },
          { kind: request.commentKind, id: request.commentId! },
          body,
          signal,
        );
        await store.updateRequest(request.id, { lastBody: body });
      }
      if (batch.settled) await store.updateRequest(request.id, { finished: true });
      return {
        state: {
          requestId: request.id,
          ...(step && { step }),
          ...(blocked.length > 0 && { blocked }),
          ...(queue && { queue }),
        },
      };
    },
  };
}
