import { sql, type Transaction } from 'kysely';
import { coalesce } from '../core/coalesce.ts';
import type { Logger } from 'pino';
import type { ThreadReplier } from '../core/thread-replier.ts';
import { ThreadRef } from '../core/thread-ref.ts';
import type { EventBus } from './event-bus.ts';
import type { SessionStore } from './session-store.ts';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';

type Trx = Transaction<Database>;

export type ThreadNotifier = { flush(sessionId: string): Promise<void>; close(): Promise<void> };

/**
 * Tells every thread of a session what happened, through the thread replier of the thread's source.
 * Each thread has a cursor in the database (`delivered_seq`), advanced only after its replier took
 * the events, so a crash or an outage delays a reply but never loses it; on start and on a timer
 * it catches up with threads that are behind. Threads are locked while replying (SKIP LOCKED),
 * so several processes never reply twice.
 */
export function startThreadNotifier(deps: {
  store: SessionStore;
  /** The database the threads' cursors (`session_threads.delivered_seq`) are kept in. */
  db: Db;
  bus: EventBus;
  repliers: ThreadReplier[];
  log: Logger;
  sweepMs?: number;
  /** How long one reply may take before it is given up and retried later. */
  replyTimeoutMs?: number;
  /** Sessions delivered at once; each holds a pooled connection for the length of its delivery. */
  concurrency?: number;
  /** How often running sessions' threads are refreshed (repliers with `refresh`). */
  refreshMs?: number;
}): ThreadNotifier {
  const { store, db, log } = deps;
  const replyTimeoutMs = deps.replyTimeoutMs ?? 120_000;
  const bySource = new Map(deps.repliers.map((r) => [r.source, r]));
  const sources = [...bySource.keys()];
  const controller = new AbortController();
  const limit = deps.concurrency ?? 3;
  let active = 0;
  const waiting: (() => void)[] = [];

  /** Bounds the deliveries in flight, so a sweep of many sessions cannot take the whole pool. */
  async function withSlot<T>(work: () => Promise<T>): Promise<T> {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else active += 1;
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active -= 1;
    }
  }

  /**
   * Locks a session's threads of `from` sources: those behind the log (to deliver) or caught up
   * with it (to refresh). Threads another process holds are skipped, not waited for.
   */
  async function lockThreads(
    trx: Trx,
    sessionId: string,
    from: string[],
    which: 'behind' | 'caught-up',
    lastSeq: number,
  ) {
    const rows = await trx
      .selectFrom('session_threads')
      .select(['id', 'thread', 'delivered_seq', 'state'])
      .where('session_id', '=', sessionId)
      .where('delivered_seq', which === 'behind' ? '<' : '>=', lastSeq)
      .where(sql<string>`thread->>'source'`, 'in', from)
      .forUpdate()
      .skipLocked()
      .execute();
    return rows.map((row) => ({
      id: row.id,
      thread: ThreadRef.parse(row.thread),
      deliveredSeq: row.delivered_seq,
      state: row.state ?? undefined,
    }));
  }

  async function saveThread(trx: Trx, id: number, state: unknown, deliveredSeq?: number): Promise<void> {
    await trx
      .updateTable('session_threads')
      .set({
        state: state === undefined ? null : JSON.stringify(state),
        ...(deliveredSeq !== undefined && { delivered_seq: deliveredSeq }),
      })
      .where('id', '=', id)
      .execute();
  }

  async function replyInThreads(sessionId: string): Promise<void> {
    if (sources.length === 0) return;
    const session = await store.get(sessionId);
    if (!session) return;
    await db.transaction().execute(async (trx) => {
      for (const row of await lockThreads(trx, sessionId, sources, 'behind', session.lastSeq)) {
        const replier = bySource.get(row.thread.source)!;
        // Read on the transaction's own connection: a second one from the pool, taken while this
        // one is held, deadlocks once every pooled connection belongs to a waiting delivery.
        // Only up to the session as read above: a later event (the run's end) seen with this older
        // session would be told with stale fields (no result yet: "no changes"). It comes next flush.
        const events = (await store.events(sessionId, { afterSeq: row.deliveredSeq, trx })).filter(
          (e) => e.seq <= session.lastSeq,
        );
        if (events.length === 0) continue;
        try {
          // Bounded: a hung replier must not hold the thread's lock and a connection for good.
          // The batch is then retried later; deliveries are idempotent per batch.
          const { state } = await bounded(row.thread.source, (signal) =>
            replier.reply({ session, thread: row.thread, events, state: row.state, signal }),
          );
          await saveThread(trx, row.id, state, events.at(-1)!.seq);
        } catch (error) {
          log.warn({ err: error, sessionId, source: row.thread.source }, 'could not update the thread; will retry');
        }
      }
    });
  }

  /** Runs a replier call with a deadline, so a hung one cannot hold a thread's lock for good. */
  function bounded<T>(source: string, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(replyTimeoutMs)]);
    return Promise.race([
      call(signal),
      new Promise<never>((_, reject) =>
        signal.addEventListener(
          'abort',
          () => reject(new Error(`${source} did not take the update within ${replyTimeoutMs / 1000} s`)),
          { once: true },
        ),
      ),
    ]);
  }

  const refreshing = deps.repliers.filter((r) => r.refresh).map((r) => r.source);

  /** Refreshes the caught-up threads of one running session; threads busy with a delivery are skipped. */
  async function refreshSession(sessionId: string): Promise<void> {
    const session = await store.get(sessionId);
    if (session?.status !== 'running') return;
    await db.transaction().execute(async (trx) => {
      for (const row of await lockThreads(trx, sessionId, refreshing, 'caught-up', session.lastSeq)) {
        const refresh = bySource.get(row.thread.source)!.refresh!;
        try {
          const { state } = await bounded(row.thread.source, (signal) =>
            refresh({ session, thread: row.thread, state: row.state, signal }),
          );
          await saveThread(trx, row.id, state);
        } catch (error) {
          log.warn({ err: error, sessionId, source: row.thread.source }, 'could not refresh the thread');
        }
      }
    });
  }

  async function refreshRunning(): Promise<void> {
    if (refreshing.length === 0) return;
    const rows = await db
      .selectFrom('session_threads')
      .innerJoin('sessions', 'sessions.id', 'session_threads.session_id')
      .select('sessions.id')
      .distinct()
      .where('sessions.status', '=', 'running')
      .where(sql<string>`session_threads.thread->>'source'`, 'in', refreshing)
      .limit(100)
      .execute();
    await Promise.all(
      rows.filter((row) => !deliveries.running(row.id)).map((row) => withSlot(() => refreshSession(row.id))),
    );
  }

  /** One delivery per session at a time; a notice during one asks for one more after it. */
  const deliveries = coalesce(
    (sessionId: string) =>
      withSlot(() => replyInThreads(sessionId)).catch((error: unknown) =>
        log.error({ err: error, sessionId }, 'thread reply failed'),
      ),
    { rerunIf: () => !controller.signal.aborted },
  );
  const flush = (sessionId: string) => deliveries.run(sessionId);

  async function sweep(): Promise<void> {
    if (sources.length === 0) return;
    const behind = await db
      .selectFrom('session_threads')
      .innerJoin('sessions', 'sessions.id', 'session_threads.session_id')
      .select('sessions.id')
      .distinct()
      .where(sql<boolean>`session_threads.delivered_seq < sessions.last_seq`)
      .where(sql<string>`session_threads.thread->>'source'`, 'in', sources)
      .limit(100)
      .execute();
    await Promise.all(behind.map((row) => flush(row.id)));
  }

  const unsubscribe = deps.bus.subscribe('*', (notice) => void flush(notice.sessionId));
  const timer = setInterval(
    () => void sweep().catch((error: unknown) => log.warn({ err: error }, 'thread sweep failed')),
    deps.sweepMs ?? 15_000,
  );
  timer.unref();
  void sweep().catch((error: unknown) => log.warn({ err: error }, 'thread sweep failed'));
  const refresher = setInterval(
    () => void refreshRunning().catch((error: unknown) => log.warn({ err: error }, 'thread refresh failed')),
    deps.refreshMs ?? 60_000,
  );
  refresher.unref();

  return {
    flush,
    async close() {
      unsubscribe();
      clearInterval(timer);
      clearInterval(refresher);
      controller.abort();
      await deliveries.settled();
    },
  };
}
