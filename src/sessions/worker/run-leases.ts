import { sql, type Kysely, type Transaction } from 'kysely';
import type { Db } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import { PatchbayError } from '../../core/errors.ts';
import { currentRunEpoch } from '../store/session-queries.ts';

/** The advisory-lock class that serializes taking leases when the run slots are limited ("PB" + 1). */
const SLOT_LOCK_CLASS = 0x5042_0001;

/** One run's hold on its session: `epoch` grows each time a run starts or takes over. */
export type RunLease = { sessionId: string; epoch: number; owner: string };

export type LeaseTake =
  | { kind: 'taken'; lease: RunLease }
  /** Another run holds the session's lease until `until` (it may renew it). */
  | { kind: 'held'; until: Date; owner: string | null }
  /** Every run slot (MAX_RUNNING_SESSIONS) is held by a live lease. */
  | { kind: 'full' };

export type RunLeases = {
  readonly leaseMs: number;
  /** MAX_RUNNING_SESSIONS over every worker sharing the database; undefined when unlimited. */
  readonly max?: number;
  readonly owner: string;
  take(sessionId: string, options?: { breakForeign?: boolean }): Promise<LeaseTake>;
  /** Extends the lease; false when another run took the session over (its epoch moved on). */
  renew(lease: RunLease): Promise<boolean>;
  /** Gives the lease back at the end of a run, so the next run of the session starts at once. */
  release(lease: RunLease): Promise<void>;
};

/** The error a write of a run that was taken over fails with. Not retryable: the run is someone else's. */
export function leaseLost(lease: RunLease, current: number | undefined, what: string): PatchbayError {
  return new PatchbayError(
    'lease_lost',
    `${what} was refused: run epoch ${lease.epoch} of session ${lease.sessionId} was taken over (now ${current ?? 'unknown'})`,
  );
}

/**
 * Runs `write` in a transaction, under `lease` when there is one: the write lands only while the
 * lease's epoch is the session's, checked under the session's row lock (which a take-over waits
 * for), and is refused with `lease_lost` (naming `what`) once another run took the session over.
 */
export function underLease<T>(
  db: Kysely<Database>,
  lease: RunLease | undefined,
  sessionId: string,
  what: string,
  write: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    if (lease) {
      const epoch = await currentRunEpoch(trx, sessionId, { lock: true });
      if (epoch !== lease.epoch) throw leaseLost(lease, epoch, what);
    }
    return write(trx);
  });
}

/**
 * Run leases in `sessions` (migration 018). A lease expires on its own `leaseMs` after it was taken
 * or last renewed, whatever happens to the holder's connections: a paused worker's runs are taken
 * over once it lapses. With `max`, a lease is a run slot: it is taken only while fewer than `max`
 * sessions hold a live one (counted under a transaction-level advisory lock, so two workers never
 * both take the last slot). `owner` names this process in the lease; `breakForeign` takes a lease
 * held by another owner at once, for a process that knows that owner is gone (it has just started
 * its own embedded database).
 */
export function createRunLeases(options: { db: Db; owner: string; leaseMs: number; max?: number }): RunLeases {
  const { db, owner, leaseMs } = options;
  return {
    leaseMs,
    ...(options.max !== undefined && { max: options.max }),
    owner,
    async take(sessionId, takeOptions = {}) {
      const breakForeign = takeOptions.breakForeign ?? false;
      return db.transaction().execute(async (trx): Promise<LeaseTake> => {
        if (options.max !== undefined) {
          await sql`select pg_advisory_xact_lock(${SLOT_LOCK_CLASS}, 0)`.execute(trx);
          const { rows } = await sql<{ live: string }>`
            select count(*) as live from sessions where lease_expires_at > now() and id <> ${sessionId}`.execute(trx);
          if (Number(rows[0]?.live ?? 0) >= options.max) return { kind: 'full' };
        }
        const { rows } = await sql<{ run_epoch: string }>`
          update sessions set run_epoch = run_epoch + 1, lease_owner = ${owner},
            lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
          where id = ${sessionId}
            and (lease_expires_at is null or lease_expires_at <= now()
              or (${breakForeign} and lease_owner is distinct from ${owner}))
          returning run_epoch`.execute(trx);
        const taken = rows[0];
        if (taken) return { kind: 'taken', lease: { sessionId, epoch: Number(taken.run_epoch), owner } };
        const held = await trx
          .selectFrom('sessions')
          .select(['lease_expires_at', 'lease_owner'])
          .where('id', '=', sessionId)
          .executeTakeFirst();
        if (!held) throw new PatchbayError('not_found', `session ${sessionId} does not exist`);
        return { kind: 'held', until: held.lease_expires_at ?? new Date(), owner: held.lease_owner };
      });
    },
    async renew(lease) {
      // Renewing a lapsed lease is fine while nobody took it over: the epoch is still this run's.
      const { rows } = await sql`
        update sessions set lease_expires_at = now() + make_interval(secs => ${leaseMs / 1000})
        where id = ${lease.sessionId} and run_epoch = ${lease.epoch}
        returning 1 as renewed`.execute(db);
      return rows.length > 0;
    },
    async release(lease) {
      await sql`
        update sessions set lease_owner = null, lease_expires_at = null
        where id = ${lease.sessionId} and run_epoch = ${lease.epoch}`.execute(db);
    },
  };
}
