/**
 * The state of a session's work at its last checkpoint: the workspace's HEAD and the tree of
 * everything in it (tracked or not, ignored files aside), on `branch`, measured from `baseCommit`.
 * The work is stored as a chain: `bundle` holds the commits from the base to a checkpoint commit of
 * the tree as it was at the last compaction, and each of `increments` the commits since the one
 * before it, so a step's checkpoint costs about what the step changed. Without a bundle,
 * `unavailable` says why the work could not be checkpointed, and a run that needs it must fail
 * saying so. In core because a run step carries the checkpoint taken after its tool call (see
 * Step in run-log.ts).
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

/** The new end of a chain an increment is added to (its bundle is the increment's). */
export type ChainedCheckpoint = Omit<WorkCheckpoint, 'bundle' | 'increments' | 'unavailable'> & { wip: string };

/**
 * The checkpoint a step stores with its tool call's result: a whole one (a new chain, or the record
 * that the work could not be checkpointed), or an increment, which lands only while the stored
 * chain still ends at its parent and has no higher step.
 */
export type StepCheckpoint =
  | { kind: 'whole'; checkpoint: WorkCheckpoint }
  | { kind: 'increment'; checkpoint: ChainedCheckpoint; increment: CheckpointIncrement };
