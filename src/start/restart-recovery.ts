import type { Logger } from 'pino';
import type { RunQueue } from '../sessions/worker/run-queue.ts';

/**
 * Runs cut off while our embedded database was down hold their queue jobs: a restart hands them
 * out again. Made before the database (whose restart it answers) and given the queue and the
 * worker once they exist; until it has a queue a restart takes nothing back.
 */
export type RestartRecovery = {
  /** The database's `onRestarted`. */
  restarted(): void;
  /** From now on a restart takes back the queue's active runs. */
  reclaimFrom(queue: Pick<RunQueue, 'reclaimActive'>): void;
  /** Runs this worker is running are spared: they wait for the database and carry on (session-worker). */
  spare(worker: { running(): ReadonlySet<string> }): void;
};

/** A recovery with no queue yet: a restart before the queue exists takes nothing back. */
export function createRestartRecovery(log: Logger): RestartRecovery {
  const parts: { queue?: Pick<RunQueue, 'reclaimActive'>; worker?: { running(): ReadonlySet<string> } } = {};
  return {
    restarted() {
      if (!parts.queue) return;
      void parts.queue.reclaimActive({ except: parts.worker?.running() ?? new Set() }).then(
        (runs) =>
          log.info(
            { runs },
            runs > 0
              ? 'took back runs cut off by the database restart'
              : 'looked for runs cut off by the database restart: none',
          ),
        (error: unknown) =>
          log.warn({ err: error }, 'could not take back runs after the database restart; the queue heartbeat will'),
      );
    },
    reclaimFrom: (queue) => {
      parts.queue = queue;
    },
    spare: (worker) => {
      parts.worker = worker;
    },
  };
}
