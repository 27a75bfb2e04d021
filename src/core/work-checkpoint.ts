/**
 * The state of a session's work at its last checkpoint: the workspace's HEAD and the tree of
 * everything in it (tracked or not, ignored files aside), on `branch`, measured from `baseCommit`.
 * `bundle` holds the commits from the base to a commit of that tree; without it, `unavailable` says
 * why the work could not be checkpointed, and a run that needs it must fail saying so. In core
 * because a run step carries the checkpoint taken after its tool call (see Step in run-log.ts).
 */
export type WorkCheckpoint = {
  /** Grows with every checkpoint of the session. */
  step: number;
  head: string;
  tree: string;
  branch: string;
  baseBranch: string;
  baseCommit: string;
  bundle: Buffer | null;
  unavailable?: string;
};
