import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import { CompiledQuery, sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { describeError } from '../core/errors.ts';
import type { Inbound, InboundOutcome } from '../core/inbound.ts';
import type { DeliveryInbox, InboundSurface, ReceivedDelivery, StoredDelivery } from '../core/inbound-surface.ts';

const QUEUE = 'inbound-delivery';
/** Jobs whose worker crashed on every attempt land here, so their delivery still ends as failed. */
const GIVEN_UP = 'inbound-delivery-given-up';

type DeliveryJob = { id: string };

/** One retry policy for every surface: exponential backoff with jitter (pg-boss's), capped. */
export type RetryPolicy = {
  /** Attempts after the first. */
  retries: number;
  /** Seconds before the first retry; each further one waits about twice as long, jittered. */
  delaySeconds: number;
  /** The longest wait between attempts. */
  maxDelaySeconds: number;
};

export const defaultRetryPolicy: RetryPolicy = { retries: 8, delaySeconds: 2, maxDelaySeconds: 300 };

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

export type InboundPipeline = DeliveryInbox & {
  /** Starts working deliveries of these surfaces (one per source). */
  start(surfaces: readonly InboundSurface[]): Promise<void>;
  /** Stored deliveries, newest first; `failed` lists only those that failed on their last attempt. */
  list(options?: { failed?: boolean; limit?: number }): Promise<DeliveryRecord[]>;
  stop(): Promise<void>;
};

/**
 * The one way in for every surface:
 *
 *   receiver: verify → accept() (one insert, unique by meaning) → ack
 *   worker:   job → surface.normalize() → Inbound | ignore(reason) → handle() → after(outcome)
 *
 * A delivery is in the database before its sender hears back, so a crash after the ack loses
 * nothing: the job is sent right after the insert, and a sweep sends one for any row a crash left
 * without. Deliveries whose meaning was stored before are dropped at the insert. A failing delivery
 * is retried with the one retry policy; on its last attempt its thread is told why and it is kept,
 * listed by failed(). No row lock is held while a surface talks to its service. Deliveries that
 * share an order key (one installation, one thread) are worked one at a time in the order they
 * were stored: a later one is parked while an earlier one is pending, retries included, and sent
 * on when that one ends.
 */
export function createInboundPipeline(deps: {
  db: Db;
  boss: PgBoss;
  handle(inbound: Inbound): Promise<InboundOutcome>;
  log: Logger;
  retry?: RetryPolicy;
  /** Seconds without a heartbeat before a worked delivery counts as crashed and is tried again (pg-boss minimum: 10). */
  heartbeatSeconds?: number;
  /** Deliveries worked at once (default 8). */
  concurrency?: number;
  pollingIntervalSeconds?: number;
  /** How often rows without a job are looked for (after a crash between insert and send). */
  sweepMs?: number;
  /**
   * Finished deliveries (done, ignored, failed) older than this many days are deleted, at start
   * and then hourly; unset: kept. Longer than any sender retries, so a late retry is still a duplicate.
   */
  retentionDays?: number;
  /** While deliveries keep arriving, the longest their jobs wait to be sent together. */
  sendWindowMs?: number;
  /** While deliveries keep arriving, the longest a worker waits before working the next one. */
  workWindowMs?: number;
}): InboundPipeline {
  const { db, boss, log } = deps;
  const retry = deps.retry ?? defaultRetryPolicy;
  const surfaces = new Map<string, InboundSurface>();
  const controller = new AbortController();
  const sending = new Set<Promise<void>>();
  let ready: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function createQueues(): Promise<void> {
    const settings = {
      retryLimit: retry.retries,
      retryDelay: retry.delaySeconds,
      retryBackoff: true,
      retryDelayMax: retry.maxDelaySeconds,
      heartbeatSeconds: deps.heartbeatSeconds ?? 30,
      expireInSeconds: 15 * 60,
      deadLetter: GIVEN_UP,
      // A stored delivery wakes a worker at once (pg-boss's LISTEN/NOTIFY) instead of at its next poll.
      notify: true,
    };
    const create = async (name: string, options: Parameters<PgBoss['createQueue']>[1]) =>
      boss.createQueue(name, options).catch(async (error: unknown) => {
        // Another process may create it at the same moment; theirs is as good as ours.
        if (!(await boss.getQueue(name))) throw error;
      });
    if (!(await boss.getQueue(GIVEN_UP))) await create(GIVEN_UP, {});
    if (await boss.getQueue(QUEUE)) await boss.updateQueue(QUEUE, settings);
    else await create(QUEUE, { policy: 'stately', ...settings });
  }

  /**
   * Sends the jobs for stored deliveries, in batches: one job insert for the deliveries of a burst
   * (see arrivalsPaused()), at once for a lone one. Off the ack path; a failure is left to the
   * sweep. Deliveries stored by accept() are marked as sent by their insert; the others (the
   * sweep's, a parked one sent on) are marked here first, for the same reason (see flush()).
   */
  const toSend: string[] = [];
  const toMark = new Set<string>();
  let sendingNow = false;
  function send(id: string, options: { marked: boolean }): void {
    toSend.push(id);
    if (!options.marked) toMark.add(id);
    if (sendingNow) return;
    sendingNow = true;
    // One send in flight at a time; whatever is stored meanwhile goes in the next one.
    const sent = (async () => {
      await ready;
      await new Promise((resolve) => setImmediate(resolve));
      while (toSend.length > 0) {
        // While a burst is being stored, its jobs go in one insert per window instead of one per batch.
        await arrivalsPaused(deps.sendWindowMs ?? 50);
        let ids = toSend.splice(0);
        const mark = ids.filter((id) => toMark.delete(id));
        if (mark.length > 0) {
          try {
            await db.updateTable('inbound_deliveries').set({ queued_at: sql`now()` }).where('id', 'in', mark).where('status', '=', 'pending').execute();
          } catch (error) {
            log.warn({ err: error, count: mark.length }, 'could not queue stored deliveries; the sweep will');
            ids = ids.filter((id) => !mark.includes(id));
            if (ids.length === 0) continue;
          }
        }
        try {
          // One job per delivery at a time: the queue is stately, keyed by the delivery's id.
          await boss.insert(QUEUE, ids.map((id) => ({ data: { id } satisfies DeliveryJob, singletonKey: id })));
        } catch (error) {
          await db
            .updateTable('inbound_deliveries')
            .set({ queued_at: null })
            .where('id', 'in', ids)
            .where('attempts', '=', 0)
            .execute()
            .catch(() => undefined);
          log.warn({ err: error, count: ids.length }, 'could not queue stored deliveries; the sweep will');
        }
      }
    })().finally(() => {
      sendingNow = false;
    });
    sending.add(sent);
    void sent.finally(() => sending.delete(sent));
  }

  /**
   * Stores deliveries in batches (group commit): the accept()s of one turn of the event loop go in
   * one multi-row insert (unique by meaning, duplicates skipped), and while it is on its way the
   * next ones wait and go together in the next. A lone delivery is stored at once; a burst costs a
   * few round trips and commits, not one each.
   */
  type Pending = { delivery: ReceivedDelivery; settle: (stored: 'accepted' | 'duplicate') => void; fail: (error: unknown) => void };
  const batch: Pending[] = [];
  let flushing = false;
  let lastAccept = 0;
  function store(delivery: ReceivedDelivery): Promise<'accepted' | 'duplicate'> {
    lastAccept = performance.now();
    return new Promise((settle, fail) => {
      batch.push({ delivery, settle, fail });
      if (flushing) return;
      flushing = true;
      // After the requests read in this turn have joined the batch.
      setImmediate(() => void drainBatches());
    });
  }
  async function drainBatches(): Promise<void> {
    try {
      while (batch.length > 0) {
        // Well under PostgreSQL's 65,535 parameters a statement.
        await flush(batch.splice(0, 1000));
      }
    } finally {
      flushing = false;
    }
  }

  /**
   * Resolves once no accept() has come for a few milliseconds, or after `maxMs`: while a burst is
   * arriving, the acks go first and the jobs of its deliveries wait to be sent together.
   */
  async function arrivalsPaused(maxMs: number, quietMs = 3): Promise<void> {
    const start = performance.now();
    for (;;) {
      const now = performance.now();
      const wait = Math.min(quietMs - (now - lastAccept), maxMs - (now - start));
      if (wait <= 0) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  async function flush(taken: Pending[]): Promise<void> {
    // Two deliveries of one meaning in the same batch: the first is stored, the second is a duplicate.
    const first = new Map<string, (typeof taken)[number]>();
    for (const entry of taken) {
      const key = `${entry.delivery.source}\u0000${entry.delivery.dedupeKey}`;
      if (first.has(key)) entry.settle('duplicate');
      else first.set(key, entry);
    }
    const entries = [...first.values()];
    try {
      // Each row is marked as sent (queued_at) as it is stored, before its job exists: a job is
      // worked the moment it is inserted, and one that parks its delivery (queued_at back to null,
      // see begin()) must not have that overwritten afterwards, or nothing would send it on. A row
      // whose job never got inserted (the process died first) is sent again by the sweep. Plain
      // bind parameters: the bodies are neither built into a query nor parsed again by PostgreSQL.
      const params = entries.flatMap(({ delivery: d }) => [d.source, d.dedupeKey, d.deliveryId ?? null, d.kind, d.body, d.orderKey ?? null]);
      const tuples = entries.map((_, i) => `($${i * 6 + 1}, $${i * 6 + 2}, $${i * 6 + 3}, $${i * 6 + 4}, $${i * 6 + 5}, $${i * 6 + 6}, now())`);
      const { rows } = await db.executeQuery<{ id: string; source: string; dedupe_key: string }>(
        CompiledQuery.raw(
          `insert into inbound_deliveries (source, dedupe_key, delivery_id, kind, body, order_key, queued_at) values ${tuples.join(', ')}
           on conflict (source, dedupe_key) do nothing returning id, source, dedupe_key`,
          params,
        ),
      );
      const stored = new Map(rows.map((r) => [`${r.source}\u0000${r.dedupe_key}`, r.id]));
      for (const entry of entries) {
        const id = stored.get(`${entry.delivery.source}\u0000${entry.delivery.dedupeKey}`);
        if (id) send(id, { marked: true });
        entry.settle(id ? 'accepted' : 'duplicate');
      }
    } catch (error) {
      for (const entry of entries) entry.fail(error);
    }
  }

  async function sweep(olderThanSeconds: number): Promise<void> {
    const rows = await db
      .selectFrom('inbound_deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .where('received_at', '<=', sql<Date>`now() - make_interval(secs => ${olderThanSeconds})`)
      // Never sent (or parked, which a resend parks again), or marked by a process that died before
      // its job was inserted: never attempted since the mark (a job of it still queued is deduped by
      // the stately queue; one being worked has counted its attempt).
      .where((eb) =>
        eb.or([eb('queued_at', 'is', null), eb.and([eb('attempts', '=', 0), eb('queued_at', '<=', sql<Date>`now() - make_interval(secs => ${olderThanSeconds})`)])]),
      )
      .orderBy('received_at')
      .limit(500)
      .execute();
    for (const row of rows) send(row.id, { marked: false });
    if (rows.length) log.info({ count: rows.length }, 'queued stored deliveries that had no job');
  }

  /** Deletes finished deliveries past the retention, a thousand at a time. */
  async function prune(): Promise<void> {
    const days = deps.retentionDays;
    if (days === undefined) return;
    let deleted = 0;
    try {
      for (;;) {
        const result = await sql`
          delete from inbound_deliveries where id in (
            select id from inbound_deliveries
            where status <> 'pending' and finished_at < now() - make_interval(days => ${days})
            limit 1000)`.execute(db);
        const count = Number(result.numAffectedRows ?? 0);
        deleted += count;
        if (count < 1000 || controller.signal.aborted) break;
      }
    } catch (error) {
      log.warn({ err: error }, 'could not delete old inbound deliveries; will try again in an hour');
    }
    if (deleted > 0) log.info({ count: deleted, olderThanDays: days }, 'deleted finished inbound deliveries past their retention');
  }

  type Row = Awaited<ReturnType<typeof selectRow>>;
  const selectRow = (id: string) => db.selectFrom('inbound_deliveries').selectAll().where('id', '=', id).executeTakeFirst();

  function toDelivery(row: NonNullable<Row>, attempt: number): StoredDelivery {
    return {
      id: row.id,
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

  /** Serialises the ordering decisions of one order key across processes, for one transaction. */
  const lockOrder = (trx: Transaction<Database>, key: string) => sql`select pg_advisory_xact_lock(hashtextextended(${`inbound-order:${key}`}, 0))`.execute(trx);

  /** Counts an attempt on a pending delivery and returns it; undefined when it is no longer pending. */
  async function countAttempt(on: Db | Transaction<Database>, id: string): Promise<StoredDelivery | undefined> {
    const row = await on
      .updateTable('inbound_deliveries')
      .set({ attempts: sql`attempts + 1` })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .returningAll()
      .executeTakeFirst();
    return row && toDelivery(row, row.attempts);
  }

  /**
   * Starts an attempt, unless an earlier delivery of the same order key is still pending: then this
   * one is parked (left without a job) until that one finishes and sends it on (see finish()).
   */
  async function begin(id: string): Promise<StoredDelivery | 'parked' | undefined> {
    const row = await db.selectFrom('inbound_deliveries').select(['order_key', 'status']).where('id', '=', id).executeTakeFirst();
    if (!row || row.status !== 'pending') return undefined;
    const key = row.order_key;
    if (!key) return countAttempt(db, id);
    return db.transaction().execute(async (trx) => {
      await lockOrder(trx, key);
      const earlier = await trx
        .selectFrom('inbound_deliveries')
        .select('id')
        .where('order_key', '=', key)
        .where('status', '=', 'pending')
        .where('id', '<', id)
        .limit(1)
        .executeTakeFirst();
      if (!earlier) return countAttempt(trx, id);
      await trx.updateTable('inbound_deliveries').set({ queued_at: null }).where('id', '=', id).where('status', '=', 'pending').execute();
      return 'parked' as const;
    });
  }

  /** Ends a delivery; the next parked delivery of its order key, if any, gets its job. */
  async function finish(delivery: Pick<StoredDelivery, 'id' | 'orderKey'>, status: 'done' | 'ignored' | 'failed', outcome: string, error?: string): Promise<void> {
    const end = (on: Db | Transaction<Database>) =>
      on
        .updateTable('inbound_deliveries')
        .set({ status, outcome, finished_at: sql`now()`, ...(error !== undefined && { last_error: error }) })
        .where('id', '=', delivery.id)
        .where('status', '=', 'pending')
        .execute();
    const key = delivery.orderKey;
    if (!key) {
      await end(db);
      return;
    }
    const next = await db.transaction().execute(async (trx) => {
      await lockOrder(trx, key);
      await end(trx);
      return trx.selectFrom('inbound_deliveries').select(['id', 'queued_at']).where('order_key', '=', key).where('status', '=', 'pending').orderBy('id').limit(1).executeTakeFirst();
    });
    if (next && next.queued_at === null) send(next.id, { marked: false });
  }

  /** The last attempt failed: keep the delivery as failed and tell its thread why. */
  async function giveUp(delivery: StoredDelivery, reason: string, dlog: Logger): Promise<void> {
    await finish(delivery, 'failed', 'gave up', reason);
    dlog.error({ attempts: delivery.attempt, reason }, 'delivery failed on its last attempt; telling its thread why');
    const surface = surfaces.get(delivery.source);
    await surface?.tellFailure(delivery, reason, AbortSignal.any([controller.signal, AbortSignal.timeout(60_000)])).catch((error: unknown) => {
      dlog.warn({ err: error }, 'could not tell the thread why its delivery failed');
    });
  }

  async function work(job: { data: DeliveryJob; retryCount: number; signal: AbortSignal }): Promise<void> {
    const delivery = await begin(job.data.id);
    if (delivery === 'parked') {
      log.debug({ inboundId: job.data.id }, 'delivery waits for an earlier one of its order key');
      return;
    }
    if (!delivery) return;
    const dlog = log.child({ inboundId: delivery.id, source: delivery.source, kind: delivery.kind, ...(delivery.deliveryId && { deliveryId: delivery.deliveryId }) });
    const surface = surfaces.get(delivery.source);
    if (!surface) {
      await finish(delivery, 'ignored', `no surface for ${delivery.source} is configured`);
      dlog.warn('delivery for a surface that is not configured; ignored');
      return;
    }
    const signal = AbortSignal.any([controller.signal, job.signal]);
    try {
      const normalized = await surface.normalize(delivery, signal);
      if (normalized.kind === 'ignore') {
        await finish(delivery, 'ignored', normalized.reason);
        dlog.debug({ reason: normalized.reason }, 'delivery ignored');
        return;
      }
      // The session service records this key in the same transaction as what it writes, so a retry
      // after a half-finished attempt writes nothing twice.
      const inbound = { ...normalized.inbound, deliveryId: normalized.inbound.deliveryId ?? `${delivery.source}:${delivery.dedupeKey}` };
      const outcome = await deps.handle(inbound);
      await normalized.after?.(outcome);
      await finish(delivery, 'done', outcome.kind);
      dlog.info({ inbound: inbound.kind, outcome: outcome.kind, ...('session' in outcome && { sessionId: outcome.session.id }) }, 'delivery handed to the session service');
    } catch (error) {
      const reason = describeError(error);
      await db.updateTable('inbound_deliveries').set({ last_error: reason.slice(0, 2000) }).where('id', '=', delivery.id).execute();
      if (signal.aborted) throw error;
      if (job.retryCount >= retry.retries) return giveUp(delivery, reason, dlog);
      dlog.warn({ err: error, attempt: job.retryCount + 1, of: retry.retries + 1 }, 'delivery failed; will retry');
      throw error;
    }
  }

  return {
    accept: store,

    async start(list) {
      for (const surface of list) surfaces.set(surface.source, surface);
      ready = createQueues();
      await ready;
      const polling = deps.pollingIntervalSeconds ?? 2;
      // Each worker takes a few jobs at a time and works them together; while its fetches come back
      // full there is a backlog, and it fetches again at once instead of at its next poll.
      const batchSize = 4;
      await boss.work<DeliveryJob>(
        QUEUE,
        {
          batchSize,
          burstWhenBatchFull: true,
          perJobResults: true,
          localConcurrency: Math.max(1, Math.ceil((deps.concurrency ?? 8) / batchSize)),
          pollingIntervalSeconds: polling,
          notifyPollingIntervalSeconds: polling,
        },
        async (jobs) => {
          // Acks first: while a burst is arriving, working its deliveries waits (a little).
          await arrivalsPaused(deps.workWindowMs ?? 250);
          return Promise.all(
            jobs.map((job) =>
              work(job).then(
                () => ({ id: job.id, status: 'completed' as const }),
                (error: unknown) => ({ id: job.id, status: 'failed' as const, output: { message: describeError(error) } }),
              ),
            ),
          );
        },
      );
      // A job whose worker died on every attempt (no throw reached the handler above).
      await boss.work<DeliveryJob>(GIVEN_UP, { pollingIntervalSeconds: polling, notifyPollingIntervalSeconds: polling }, async (jobs) => {
        for (const job of jobs) {
          const row = await selectRow(job.data.id);
          if (row?.status === 'pending') await giveUp(toDelivery(row, row.attempts), 'its worker stopped on every attempt', log.child({ inboundId: row.id }));
        }
      });
      await sweep(0);
      await prune();
      let pruned = Date.now();
      timer = setInterval(() => {
        void sweep(30).catch((error: unknown) => log.warn({ err: error }, 'inbound sweep failed'));
        if (Date.now() - pruned < 3_600_000) return;
        pruned = Date.now();
        void prune();
      }, deps.sweepMs ?? 30_000);
      timer.unref();
    },

    async list(options = {}) {
      let query = db.selectFrom('inbound_deliveries').selectAll().orderBy('id', 'desc').limit(options.limit ?? 100);
      if (options.failed) query = query.where('status', '=', 'failed');
      const rows = await query.execute();
      return rows.map((r) => ({
        id: r.id,
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
    },

    async stop() {
      if (timer) clearInterval(timer);
      controller.abort();
      await Promise.allSettled([...sending]);
      await boss.offWork(QUEUE).catch(() => undefined);
      await boss.offWork(GIVEN_UP).catch(() => undefined);
    },
  };
}
