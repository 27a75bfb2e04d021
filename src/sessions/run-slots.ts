import type { Logger } from 'pino';
import { tryAdvisoryLock } from '../../db/advisory-lock.ts';

/** The advisory-lock class of run slots (an arbitrary constant, "PB" + 1). */
const SLOT_LOCK_CLASS = 0x5042_0001;

export type RunSlot = { release(): Promise<void> };

export interface RunSlots {
  readonly max: number;
  /** Takes a free slot, or returns undefined when all `max` are held (by any process). */
  tryAcquire(): Promise<RunSlot | undefined>;
}

/**
 * MAX_RUNNING_SESSIONS over every worker process sharing the database. Slot i is the session-level
 * advisory lock (class, i) held on a connection of its own for as long as the run lasts, so a worker
 * that dies (SIGKILL, lost host) gives its slots back the moment PostgreSQL sees its connections
 * close, with no lease to expire.
 */
export function createRunSlots(options: { url: string; max: number; log: Logger }): RunSlots {
  const { log } = options;
  return {
    max: options.max,
    async tryAcquire() {
      // Starting at a random slot spreads the tries of many waiting workers.
      const first = Math.floor(Math.random() * options.max);
      const slots = Array.from({ length: options.max }, (_, i) => (first + i) % options.max);
      return tryAdvisoryLock({ url: options.url, classId: SLOT_LOCK_CLASS, keys: slots, log, what: 'run slot' });
    },
  };
}
