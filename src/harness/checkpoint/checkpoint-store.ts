import type { ChainedCheckpoint, CheckpointIncrement, WorkCheckpoint } from '../../core/work-checkpoint.ts';

export type { ChainedCheckpoint, CheckpointIncrement, WorkCheckpoint };

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
  append(sessionId: string, checkpoint: ChainedCheckpoint, increment: CheckpointIncrement): Promise<boolean>;
}
