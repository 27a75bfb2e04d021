import type { Logger } from 'pino';
import { threadKey } from '../../src/core/thread-ref.ts';
import type { ThreadReplier, ThreadUpdate } from '../../src/core/thread-replier.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { GitHubClient } from './github-client.ts';
import { editComment } from './github-comments.ts';
import type { GitHubStore } from './github-store.ts';
import type { ProgressComments } from './progress-comments.ts';
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
  /** Where the first progress comment of a request, posted by the interpreter's reply step, is awaited. */
  comments: ProgressComments;
  log: Logger;
}): ThreadReplier {
  const { client, store, context, comments } = deps;

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
      const request = open.at(-1)!;
      const commentId = await comments.commentId(request, signal);
      const fresh = (await context.sessions.get(session.id)) ?? session;
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
          { kind: request.commentKind, id: commentId },
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
