import pg from 'pg';
import type { Logger } from 'pino';

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
      const client = new pg.Client({ connectionString: options.url });
      // A dropped connection loses the slot; the run goes on (briefly over the limit) rather than stop.
      client.on('error', (error) => log.warn({ err: error }, 'run slot connection lost'));
      await client.connect();
      try {
        // Starting at a random slot spreads the tries of many waiting workers.
        const first = Math.floor(Math.random() * options.max);
        for (let i = 0; i < options.max; i++) {
          const slot = (first + i) % options.max;
          const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1, $2) as locked', [SLOT_LOCK_CLASS, slot]);
          if (rows[0]?.locked) {
            return {
              async release() {
                await client.query('select pg_advisory_unlock($1, $2)', [SLOT_LOCK_CLASS, slot]).catch(() => undefined);
                await client.end().catch(() => undefined);
              },
            };
          }
        }
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
      await client.end().catch(() => undefined);
      return undefined;
    },
  };
}
