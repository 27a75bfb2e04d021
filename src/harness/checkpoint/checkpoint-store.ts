/**
 * The state of a session's work at its last checkpoint: the workspace's HEAD and the tree of
 * everything in it (tracked or not, ignored files aside), on `branch`, measured from `baseCommit`.
 * `bundle` holds the commits from the base to a commit of that tree; without it, `unavailable` says
 * why the work could not be checkpointed, and a run that needs it must fail saying so.
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

/** The latest checkpoint per session (`session_checkpoints`); the sessions layer implements it. */
export interface CheckpointStore {
  latest(sessionId: string): Promise<WorkCheckpoint | undefined>;
  /** Keeps the checkpoint unless the stored one has a higher step. */
  save(sessionId: string, checkpoint: WorkCheckpoint): Promise<void>;
}
