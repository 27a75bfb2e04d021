import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import type { PatchbayOctokit } from './github-client.ts';
import { type CommentPlace, postComment } from './github-comments.ts';
import type { GitHubRequest, GitHubStore } from './github-store.ts';

/** What a request's progress comment is posted from: its row, or the same fields before the row is read. */
export type ProgressTarget = Pick<
  GitHubRequest,
  'id' | 'owner' | 'repo' | 'number' | 'commentKind' | 'replyTo' | 'lastBody'
>;

export type PostOnceDeps = {
  octokit: PatchbayOctokit;
  /** The App's bot login (`slug[bot]`): only its comments count as the post. */
  botLogin: string;
  store: Pick<GitHubStore, 'intendComment' | 'updateRequest'>;
  log: Logger;
  sleep?: (ms: number) => Promise<void>;
};

const maxTries = 3;

/**
 * The hidden line a progress comment carries, naming its request: a post whose answer was lost,
 * or that a process made before it crashed, is found in the thread by it.
 */
export function progressMarker(requestId: number): string {
  return `<!-- patchbay-request:${requestId} -->`;
}

/**
 * Posts a request's progress comment exactly once and records its id. The intent is recorded
 * first; a post begun before and not recorded (a crash between posting and recording), or one
 * whose answer was lost (the connection dropped after GitHub took it, a 5xx), is looked for in the
 * thread by its marker before it is made again. Octokit's own retries are off for the post, since
 * they would repeat an accepted one. GitHub's refusals (4xx) are final: the request is finished
 * without a comment, and the refusal thrown.
 */
export async function postProgressOnce(
  deps: PostOnceDeps,
  target: ProgressTarget,
  signal?: AbortSignal,
): Promise<number> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const place = placeOfTarget(target);
  const body = `${target.lastBody ?? '👀 On it.'}\n\n${progressMarker(target.id)}`;
  let doubt = await deps.store.intendComment(target.id);
  for (let attempt = 1; ; attempt += 1) {
    const found = doubt ? await findProgress(deps, place, target.id) : undefined;
    if (found !== undefined) {
      deps.log.info(
        { requestId: target.id, commentId: found },
        'the progress comment is on GitHub already; not posting it again',
      );
      await deps.store.updateRequest(target.id, { commentId: found });
      return found;
    }
    try {
      const posted = await postComment(deps.octokit, place, body, signal, { retries: 0 });
      await deps.store.updateRequest(target.id, { commentId: posted.id });
      return posted.id;
    } catch (error) {
      const fault = classify(error);
      // GitHub will not take it: the request goes on without a progress comment, finished.
      if (fault.kind === 'refused') await deps.store.updateRequest(target.id, { finished: true });
      if (fault.kind === 'refused' || attempt >= maxTries || signal?.aborted) throw error;
      deps.log.warn(
        { requestId: target.id, attempt, err: error },
        'posting the progress comment failed; looking in the thread before posting again',
      );
      doubt = doubt || fault.kind === 'ambiguous';
      await sleep(fault.waitMs);
    }
  }
}

function placeOfTarget(target: ProgressTarget): CommentPlace {
  const where = { owner: target.owner, repo: target.repo, number: target.number };
  if (target.commentKind === 'issue') return { ...where, in: 'issue' };
  if (target.replyTo === null)
    throw new PatchbayError('invalid_input', 'a review-thread request recorded without the comment it answers');
  return { ...where, in: 'review', id: target.replyTo };
}

/** The id of the bot's comment in the thread that carries the request's marker, if there is one. */
async function findProgress(deps: PostOnceDeps, place: CommentPlace, requestId: number): Promise<number | undefined> {
  const marker = progressMarker(requestId);
  for (let page = 1; ; page += 1) {
    const list = await threadPage(deps.octokit, place, page);
    const hit = list.find(
      (c) =>
        c.user?.login === deps.botLogin &&
        c.body?.includes(marker) &&
        (place.in === 'issue' || c.in_reply_to_id === place.id),
    );
    if (hit) return Number(hit.id);
    if (list.length < perPage) return undefined;
  }
}

const perPage = 100;

type ListedComment = {
  id: number | bigint;
  body?: string | undefined;
  user: { login: string } | null;
  in_reply_to_id?: number | undefined;
};

/** One page of the conversation's comments, or of the pull request's review comments. */
async function threadPage(octokit: PatchbayOctokit, place: CommentPlace, page: number): Promise<ListedComment[]> {
  const where = { owner: place.owner, repo: place.repo, per_page: perPage, page };
  if (place.in === 'issue')
    return (
      await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        ...where,
        issue_number: place.number,
      })
    ).data;
  return (
    await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}/comments', {
      ...where,
      pull_number: place.number,
    })
  ).data;
}

type Fault = { kind: 'refused' } | { kind: 'ambiguous' | 'not-posted'; waitMs: number };

/**
 * What a failed post means: GitHub refused it (a 4xx other than a rate limit: final); GitHub
 * limited it (429, or 403 with a Retry-After or no requests left: not posted, wait); anything else
 * (no answer, which Octokit reports as a 500, or a 5xx) may have been posted.
 */
function classify(error: unknown): Fault {
  const { status, response } = error as {
    status?: number;
    response?: { headers?: Record<string, string | undefined> };
  };
  const headers = response?.headers ?? {};
  const retryAfter = Number(headers['retry-after']);
  const limited =
    status === 429 ||
    (status === 403 && (headers['retry-after'] !== undefined || headers['x-ratelimit-remaining'] === '0'));
  if (limited) return { kind: 'not-posted', waitMs: Number.isFinite(retryAfter) ? retryAfter * 1000 : 60_000 };
  if (status !== undefined && status >= 400 && status < 500 && status !== 408) return { kind: 'refused' };
  return { kind: 'ambiguous', waitMs: 1000 };
}
