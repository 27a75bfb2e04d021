import { PatchbayError } from '../../src/core/errors.ts';
import type { GitHubRequest, GitHubStore } from './github-store.ts';

/** How long a post another process began is left to it before this one looks for it (or posts it). */
const elsewhereGraceMs = 60_000;

/** Posts (or finds, when in doubt) a request's progress comment from its row and records its id. */
export type RecoverComment = (request: GitHubRequest, signal: AbortSignal) => Promise<number>;

/**
 * The progress comments this process is posting, by request: the interpreter's reply step posts a
 * request's first comment ("👀 On it", throttled, so not in the delivery's way) and records its id;
 * the replier, called for the same request's first events, awaits that post here instead of asking
 * the store again and again. A comment posted by another process (or before a restart) is read from
 * the store once. A request with no comment recorded and no post under way (its post failed, or a
 * process crashed before recording it) gets it from `recover`, which looks for a post in doubt first.
 */
export class ProgressComments {
  readonly #store: Pick<GitHubStore, 'openRequests'>;
  readonly #recover: RecoverComment;
  readonly #posting = new Map<number, Promise<number | undefined>>();
  /** Requests this process has posted (or tried to): their intent is its own, not another process's. */
  readonly #tried = new Set<number>();
  readonly #now: () => number;

  constructor(store: Pick<GitHubStore, 'openRequests'>, recover: RecoverComment, now: () => number = Date.now) {
    this.#store = store;
    this.#recover = recover;
    this.#now = now;
  }

  /**
   * Posts a request's progress comment with `post` (which records its id and returns it, or
   * undefined when it could not be posted); until it ends, `commentId` of the request waits for it.
   */
  post(requestId: number, post: () => Promise<number | undefined>): Promise<number | undefined> {
    this.#tried.add(requestId);
    const posting = post();
    this.#posting.set(requestId, posting);
    const done = () => void this.#posting.delete(requestId);
    posting.then(done, done);
    return posting;
  }

  /**
   * The id of a request's progress comment: as stored, once this process's post of it ended, or
   * else posted (or found) now from the stored row. Throws a retryable error when it is not posted
   * (yet): the notifier tries the batch again.
   */
  async commentId(request: GitHubRequest, signal: AbortSignal): Promise<number> {
    const posted = request.commentId ?? (await this.#posted(request.id, signal));
    if (posted !== null && posted !== undefined) return posted;
    const row = (await this.#store.openRequests(request.threadKey)).find((r) => r.id === request.id);
    if (row?.commentId !== null && row?.commentId !== undefined) return row.commentId;
    if (row && !this.#posting.has(row.id) && !this.#postingElsewhere(row))
      void this.post(row.id, () => this.#recover(row, signal));
    const id = await this.#posted(request.id, signal);
    if (id === null || id === undefined)
      throw new PatchbayError('conflict', 'the progress comment is not posted yet', { retryable: true });
    return id;
  }

  /**
   * Whether a post of this request's comment that this process did not try is likely under way:
   * begun lately by another process, or not begun yet by the interpreter that took the request
   * lately (it posts soon after taking it; two processes polling GitHub take requests for each
   * other's repliers). Such a post is left to end; one begun (or due) longer ago is a crash's.
   */
  #postingElsewhere(row: GitHubRequest): boolean {
    if (this.#tried.has(row.id)) return false;
    const due = row.commentIntendedAt ?? row.createdAt;
    return this.#now() - due.getTime() < elsewhereGraceMs;
  }

  /** Waits for every post under way (at shutdown). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#posting.values()]);
  }

  async #posted(requestId: number, signal: AbortSignal): Promise<number | undefined> {
    const posting = this.#posting.get(requestId);
    if (!posting) return undefined;
    signal.throwIfAborted();
    const aborted = new Promise<never>((_, reject) =>
      signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
    );
    return Promise.race([posting, aborted]);
  }
}
