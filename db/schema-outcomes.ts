import type { ColumnType } from 'kysely';

/** Tables of pull request outcomes (migration 017), kept apart from db/schema.ts for its size. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export interface PullOutcomesTable {
  /** Lower case, as the key. */
  owner: string;
  repo: string;
  number: number;
  session_id: string;
  url: string;
  branch: string;
  base_branch: string;
  /** Patchbay's latest commit on the PR's branch. */
  patchbay_commit: string;
  opened_at: Timestamp;
  /** open | merged | closed */
  state: ColumnType<string, string | undefined, string>;
  finished_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  finished_by: string | null;
  merge_commit: string | null;
  /** SHAs people pushed after Patchbay's latest commit (a JSON array). */
  human_commits: ColumnType<string[], string | undefined, string>;
  /** Ids of the reviews people submitted (a JSON array): one review round each. */
  review_ids: ColumnType<number[], string | undefined, string>;
  reverted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revert_commit: string | null;
  /** The conclusion of CI on the merge commit (the default branch after the merge). */
  merge_ci: string | null;
  merge_ci_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  updated_at: Timestamp;
}

/**
 * What the default branch's webhooks said about a commit (CI, a revert of it), kept for a merge
 * commit whose pull request's merge is recorded after them: webhooks of a repository are not
 * ordered with those of a pull request, so a status can be worked before the PR's `closed`.
 */
export interface CommitSignalsTable {
  owner: string;
  repo: string;
  /** As the signal named it: a full SHA, or the prefix a revert message gave. */
  commit: string;
  ci: string | null;
  ci_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  revert_commit: string | null;
  reverted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}
