/**
 * What became of a pull request a session opened, as GitHub told it (webhooks, or a read of the PR
 * for one opened before outcome tracking). Written by integrations through `OutcomeLedger`, read by
 * the Insights API next to what Patchbay knew of the session.
 */
export type PullState = 'open' | 'merged' | 'closed';

/** One pull request, named as GitHub names it. */
export type PullKey = { owner: string; repo: string; number: number };

/** The pull request a session opened (or updated) with Patchbay's latest commit on it. */
export type PullOpened = PullKey & {
  sessionId: string;
  url: string;
  branch: string;
  baseBranch: string;
  commit: string;
  at: Date;
};

/** A pull request merged or closed unmerged: when, by whom, and (merged) the commit on the base branch. */
export type PullFinished = PullKey & { state: 'merged' | 'closed'; at: Date; by?: string; mergeCommit?: string };

/**
 * The port integrations record outcomes through (they never write session tables themselves).
 * Every method is safe to repeat with the same input: a retried webhook changes nothing twice.
 */
export interface OutcomeLedger {
  /** Patchbay pushed `commit` to the PR: commits people pushed before it no longer count as after it. */
  opened(pull: PullOpened): Promise<void>;
  /** Nothing happens for a pull request no session opened (only those are tracked). */
  finished(pull: PullFinished): Promise<void>;
  /** People (not Patchbay) pushed these commits to the branch of a tracked PR. */
  humanCommits(where: { owner: string; repo: string; branch: string }, shas: readonly string[]): Promise<void>;
  /** A person submitted a review (one review round) on a tracked PR. */
  reviewed(pull: PullKey, reviewId: number): Promise<void>;
  /**
   * A commit on the default branch reverts `reverted` (its "This reverts commit <sha>" line): the
   * PR merged as that commit counts as reverted when it happened within 14 days of the merge.
   * Returns the pull requests it marked.
   */
  reverted(
    where: { owner: string; repo: string },
    reverted: string,
    revertCommit: string,
    at: Date,
  ): Promise<PullKey[]>;
  /** CI finished on a commit: recorded on the PR merged as that commit (CI on the default branch after the merge). */
  mergeCi(where: { owner: string; repo: string }, commit: string, conclusion: string, at: Date): Promise<void>;
  /**
   * Pull requests to read from GitHub (backfill): those sessions opened before outcome tracking
   * (their `pr-opened` events, now tracked too) and every tracked one still open as far as Patchbay knows.
   */
  backfillCandidates(): Promise<PullKey[]>;
}

/** How long after the merge a revert still counts as reverting it. */
export const revertWindowMs = 14 * 24 * 60 * 60 * 1000;

/** The commit a revert's message names (`This reverts commit <sha>.`), as git writes it. */
export function revertedCommit(message: string): string | undefined {
  if (!/^Revert "/.test(message)) return undefined;
  return /^This reverts commit ([0-9a-f]{7,40})\b/m.exec(message)?.[1];
}
