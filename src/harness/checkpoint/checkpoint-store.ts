/**
 * The state of a session's work at its last checkpoint: the workspace's HEAD and the tree of
 * everything in it (tracked or not, ignored files aside), on `branch`, measured from `baseCommit`.
 * The work is stored as a chain: `bundle` holds the commits from the base to a checkpoint commit of
 * the tree as it was at the last compaction, and each of `increments` the commits since the one
 * before it, so a step's checkpoint costs about what the step changed. Without a bundle,
 * `unavailable` says why the work could not be checkpointed, and a run that needs it must fail
 * saying so.
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
  /** Bundles taken after `bundle`, oldest first, each against the checkpoint commit before it. */
  increments?: Buffer[];
  /** The checkpoint commit (of `tree`, on `head`) the chain ends at: the next increment is taken against it. */
  wip?: string;
  unavailable?: string;
};

/** A checkpoint stored as an increment: the bundle of what changed since the chain's last commit `parent`. */
export type CheckpointIncrement = { parent: string; bundle: Buffer };

/** The latest checkpoint per session (`session_checkpoints`); the sessions layer implements it. */
export interface CheckpointStore {
  latest(sessionId: string): Promise<WorkCheckpoint | undefined>;
  /** Keeps the checkpoint unless the stored one has a higher step; a stored one starts a new chain (its increments go). */
  save(sessionId: string, checkpoint: WorkCheckpoint): Promise<void>;
  /**
   * Adds `increment` to the stored chain and makes `checkpoint` the latest, only while the chain
   * still ends at `increment.parent` and has no higher step. False when it did not (the caller
   * stores a whole checkpoint instead).
   */
  append(sessionId: string, checkpoint: Omit<WorkCheckpoint, 'bundle' | 'increments' | 'unavailable'> & { wip: string }, increment: CheckpointIncrement): Promise<boolean>;
}
