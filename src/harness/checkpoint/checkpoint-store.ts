import type { WorkCheckpoint } from '../../core/work-checkpoint.ts';

export type { WorkCheckpoint };

/** The latest checkpoint per session (`session_checkpoints`); the sessions layer implements it. */
export interface CheckpointStore {
  latest(sessionId: string): Promise<WorkCheckpoint | undefined>;
  /** Keeps the checkpoint unless the stored one has a higher step. */
  save(sessionId: string, checkpoint: WorkCheckpoint): Promise<void>;
}
