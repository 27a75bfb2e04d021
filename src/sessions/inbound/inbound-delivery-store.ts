import { CompiledQuery, sql, type Selectable } from 'kysely';
import type { ArgsAfterDb, Db } from '../../../db/database.ts';
import { prepared } from '../../../db/prepared-statements.ts';
import type { Database } from '../../../db/schema.ts';
import type { ReceivedDelivery, StoredDelivery } from '../../core/delivery-interpreter.ts';

/**
 * A delivery's id outside the store is an opaque string (it travels in job payloads and the API);
 * in the table it is a bigserial, read as a number (db/database.ts parses INT8 to numbers).
 */
const rowId = (id: string): number => {
  const n = Number(id);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`not a delivery id: ${id}`);
  return n;
};

export type DeliveryRecord = {
  id: string;
  source: string;
  status: 'pending' | 'done' | 'ignored' | 'failed';
  /** The session service's outcome, the reason it was ignored, or 'gave up'. */
  outcome: string | null;
  kind: string;
  deliveryId: string | null;
  dedupeKey: string;
  receivedAt: string;
  finishedAt: string | null;
  attempts: number;
  error: string | null;
};

// The bigserial ids come back as numbers (db/database.ts parses int8); outside this file they are strings.
type Row = Selectable<Database['inbound_deliveries']>;

/** A delivery's identity within its source: the same meaning twice is stored once. */
export const meaningKey = (delivery: Pick<ReceivedDelivery, 'source' | 'dedupeKey'>) =>
  `${delivery.source}\u0000${delivery.dedupeKey}`;

export type InboundDeliveryStore = ReturnType<typeof createInboundDeliveryStore>;

/**
 * All SQL of `inbound_deliveries`: the raw deliveries as received, their attempts, the order of
 * deliveries that share an order key, and their end. Knows nothing of queues or surfaces.
 */
export function createInboundDeliveryStore(db: Db) {
  return {
    insertMarked: (...args: ArgsAfterDb<typeof insertMarked>) => insertMarked(db, ...args),
    markQueued: (...args: ArgsAfterDb<typeof markQueued>) => markQueued(db, ...args),
    unmarkQueued: (...args: ArgsAfterDb<typeof unmarkQueued>) => unmarkQueued(db, ...args),
    unsent: (...args: ArgsAfterDb<typeof unsent>) => unsent(db, ...args),
    deleteFinished: (...args: ArgsAfterDb<typeof deleteFinished>) => deleteFinished(db, ...args),
    pending: (...args: ArgsAfterDb<typeof pending>) => pending(db, ...args),
    begin: (...args: ArgsAfterDb<typeof begin>) => begin(db, ...args),
    finish: (...args: ArgsAfterDb<typeof finish>) => finish(db, ...args),
    recordError: (...args: ArgsAfterDb<typeof recordError>) => recordError(db, ...args),
    list: (...args: ArgsAfterDb<typeof list>) => list(db, ...args),
  };
}

/**
 * Stores deliveries in one multi-row insert, skipping meanings stored before; returns the ids of
 * those stored, by meaning. Each row is marked as sent (queued_at) as it is stored, before its job
 * exists: a job is worked the moment it is inserted, and one that parks its delivery (queued_at
 * back to null, see begin()) must not have that overwritten afterwards, or nothing would send it
 * on. Plain bind parameters: the bodies are neither built into a query nor parsed again by PostgreSQL.
 */
async function insertMarked(db: Db, deliveries: readonly ReceivedDelivery[]): Promise<Map<string, string>> {
  const params = deliveries.flatMap((d) => [
    d.source,
    d.dedupeKey,
    d.deliveryId ?? null,
    d.kind,
    d.body,
    d.orderKey ?? null,
  ]);
  const tuples = deliveries.map(
    (_, i) => `($${i * 6 + 1}, $${i * 6 + 2}, $${i * 6 + 3}, $${i * 6 + 4}, $${i * 6 + 5}, $${i * 6 + 6}, now())`,
  );
  const { rows } = await db.executeQuery<{ id: number; source: string; dedupe_key: string }>(
    CompiledQuery.raw(
      `insert into inbound_deliveries (source, dedupe_key, delivery_id, kind, body, order_key, queued_at) values ${tuples.join(', ')}
       on conflict (source, dedupe_key) do nothing returning id, source, dedupe_key`,
      params,
    ),
  );
  return new Map(rows.map((r) => [meaningKey({ source: r.source, dedupeKey: r.dedupe_key }), String(r.id)]));
}

/** Marks pending deliveries as sent, before their jobs are inserted (see insertMarked()). */
async function markQueued(db: Db, ids: readonly string[]): Promise<void> {
  await db
    .updateTable('inbound_deliveries')
    .set({ queued_at: sql`now()` })
    .where('id', 'in', ids.map(rowId))
    .where('status', '=', 'pending')
    .execute();
}

/** Their jobs could not be inserted: leaves the never-attempted ones for the sweep. */
async function unmarkQueued(db: Db, ids: readonly string[]): Promise<void> {
  await db
    .updateTable('inbound_deliveries')
    .set({ queued_at: null })
    .where('id', 'in', ids.map(rowId))
    .where('attempts', '=', 0)
    .execute();
}

/**
 * Pending deliveries older than this that have no job: never sent (or parked, which a resend
 * parks again), or marked by a process that died before its job was inserted (never attempted
 * since the mark; a job of it still queued is deduped by the stately queue, one being worked
 * has counted its attempt).
 */
async function unsent(db: Db, olderThanSeconds: number, limit = 500): Promise<string[]> {
  const age = sql<Date>`now() - make_interval(secs => ${olderThanSeconds})`;
  const rows = await db
    .selectFrom('inbound_deliveries')
    .select('id')
    .where('status', '=', 'pending')
    .where('received_at', '<=', age)
    .where((eb) => eb.or([eb('queued_at', 'is', null), eb.and([eb('attempts', '=', 0), eb('queued_at', '<=', age)])]))
    .orderBy('received_at')
    .limit(limit)
    .execute();
  return rows.map((row) => String(row.id));
}

/** Deletes up to `limit` finished deliveries older than `days`; returns how many. */
async function deleteFinished(db: Db, days: number, limit = 1000): Promise<number> {
  const result = await sql`
    delete from inbound_deliveries where id in (
      select id from inbound_deliveries
      where status <> 'pending' and finished_at < now() - make_interval(days => ${days})
      limit ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** A pending delivery as stored, with the attempts counted so far; undefined once it has ended. */
async function pending(db: Db, id: string): Promise<StoredDelivery | undefined> {
  const row = await db.selectFrom('inbound_deliveries').selectAll().where('id', '=', rowId(id)).executeTakeFirst();
  return row?.status === 'pending' ? toDelivery(row, row.attempts) : undefined;
}

/**
 * Starts an attempt (counts it and returns the delivery), unless an earlier delivery of the same
 * order key is still pending: then this one is parked (left without a job) until that one
 * finishes and sends it on (see finish()). Undefined when it is no longer pending.
 *
 * One statement, one round trip: the earlier pending delivery it finds is locked FOR SHARE, so
 * that delivery's finish() (whose update needs the row) waits until this decision is committed
 * and then sees this one parked; a finish() that came first has ended the row, which the lock's
 * recheck then skips. That is the only race the ordering has, and a unique row decides it.
 */
async function begin(db: Db, id: string): Promise<StoredDelivery | 'parked' | undefined> {
  const { rows } = await db.executeQuery<DeliveryRow & { parked: boolean }>(
    CompiledQuery.raw(beginStatement, [rowId(id)]),
  );
  const row = rows[0];
  if (!row) return undefined;
  return row.parked ? 'parked' : toDelivery(row, row.attempts);
}

/**
 * Ends a pending delivery. Returns the next delivery of its order key that is parked (pending
 * with no job), which the caller must send on. Two statements, in this order and not one: the
 * update waits for a begin() that holds this row (see there), and only a query started after it
 * sees what that begin() decided.
 */
async function finish(
  db: Db,
  delivery: Pick<StoredDelivery, 'id' | 'orderKey'>,
  status: 'done' | 'ignored' | 'failed',
  outcome: string,
  error?: string,
): Promise<string | undefined> {
  await db.executeQuery(CompiledQuery.raw(finishStatement, [rowId(delivery.id), status, outcome, error ?? null]));
  const key = delivery.orderKey;
  if (!key) return undefined;
  const { rows } = await db.executeQuery<{ id: number; queued_at: Date | null }>(
    CompiledQuery.raw(nextPendingStatement, [key]),
  );
  const next = rows[0];
  return next && next.queued_at === null ? String(next.id) : undefined;
}

/** Keeps why the last attempt failed. */
async function recordError(db: Db, id: string, reason: string): Promise<void> {
  await db
    .updateTable('inbound_deliveries')
    .set({ last_error: reason.slice(0, 2000) })
    .where('id', '=', rowId(id))
    .execute();
}

/** Stored deliveries, newest first; `failed` lists only those that failed on their last attempt. */
async function list(db: Db, options: { failed?: boolean; limit?: number } = {}): Promise<DeliveryRecord[]> {
  let query = db
    .selectFrom('inbound_deliveries')
    .selectAll()
    .orderBy('id', 'desc')
    .limit(options.limit ?? 100);
  if (options.failed) query = query.where('status', '=', 'failed');
  const rows = await query.execute();
  return rows.map((r) => ({
    id: String(r.id),
    source: r.source,
    status: r.status,
    outcome: r.outcome,
    kind: r.kind,
    deliveryId: r.delivery_id,
    dedupeKey: r.dedupe_key,
    receivedAt: r.received_at.toISOString(),
    finishedAt: r.finished_at?.toISOString() ?? null,
    attempts: r.attempts,
    error: r.last_error,
  }));
}

function toDelivery(row: DeliveryRow, attempt: number): StoredDelivery {
  return {
    id: String(row.id),
    source: row.source,
    dedupeKey: row.dedupe_key,
    ...(row.delivery_id && { deliveryId: row.delivery_id }),
    kind: row.kind,
    body: row.body,
    ...(row.order_key && { orderKey: row.order_key }),
    receivedAt: row.received_at.toISOString(),
    attempt,
  };
}

/** What a delivery is made of (the columns toDelivery() reads). */
type DeliveryRow = Pick<
  Row,
  'id' | 'source' | 'dedupe_key' | 'delivery_id' | 'kind' | 'body' | 'order_key' | 'received_at' | 'attempts'
>;
const deliveryColumns = 'id, source, dedupe_key, delivery_id, kind, body, order_key, received_at, attempts';

// The statements every delivery runs, prepared once per connection (db/prepared-statements.ts).

/** begin(): parks the delivery behind an earlier pending one of its order key, or counts an attempt. */
const beginStatement = prepared(
  'inbound-begin',
  `with earlier as materialized (
     select e.id from inbound_deliveries d
     join inbound_deliveries e on e.order_key = d.order_key and e.status = 'pending' and e.id < d.id
     where d.id = $1 and d.status = 'pending'
     limit 1
     for share of e),
   parked as (
     update inbound_deliveries set queued_at = null
     where id = $1 and status = 'pending' and exists (select from earlier)
     returning ${deliveryColumns}),
   counted as (
     update inbound_deliveries set attempts = attempts + 1
     where id = $1 and status = 'pending' and not exists (select from earlier)
     returning ${deliveryColumns})
   select *, false as parked from counted
   union all
   select *, true as parked from parked`,
);

/** finish(): ends a pending delivery; the error is kept only when there is one. */
const finishStatement = prepared(
  'inbound-finish',
  `update inbound_deliveries
   set status = $2, outcome = $3, finished_at = now(), last_error = coalesce($4::text, last_error)
   where id = $1 and status = 'pending'`,
);

/** finish(): the first pending delivery of an order key, and whether it has a job. */
const nextPendingStatement = prepared(
  'inbound-next-pending',
  `select id, queued_at from inbound_deliveries
   where order_key = $1 and status = 'pending' order by id limit 1`,
);
