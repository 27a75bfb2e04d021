import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../../db/schema.ts';
import { type Coalescer, coalesce } from '../../core/coalesce.ts';
import type { SessionEventType } from '../../core/events.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import type { SubtaskLine } from '../../core/subtasks.ts';
import type { ThreadSource } from '../../core/thread-ref.ts';
import type { ThreadReplier } from '../../core/thread-replier.ts';
import type { EventBus, EventNotice, NoticeListener } from './event-bus.ts';
import type { SessionStore } from '../store/session-store.ts';
import { createThreadCursorStore, type LockedThread, type ThreadCursorStore, type Trx } from './thread-cursor-store.ts';

export type ThreadNotifier = { flush(sessionId: string): Promise<void>; close(): Promise<void> };

export type ThreadNotifierDeps = {
  store: SessionStore;
  /** The database of `session_threads`, whose cursors the notifier keeps (ThreadCursorStore). */
  db: Kysely<Database>;
  bus: EventBus;
  /** One replier per thread source; a source without one is never replied to. */
  repliers: readonly ThreadReplier[];
  log: Logger;
  sweepMs?: number;
  /** How long one reply may take before it is given up and retried later. */
  replyTimeoutMs?: number;
  /** Sessions replied to at once; each holds a pooled connection for the length of its pass. */
  concurrency?: number;
  /** How often running sessions' threads are refreshed (repliers with `refresh`). */
  refreshMs?: number;
};

/**
 * The events after which a session, if it is a sub-task, is listed differently under its parent
 * (its status, and with it its result and error): its parent's threads are refreshed then.
 */
const subtaskLineTypes = new Set<string>(['status-changed', 'branch-pushed', 'pr-opened'] satisfies SessionEventType[]);

/** The repliers by the source of the threads they reply in. */
type Repliers = { [S in ThreadSource]?: ThreadReplier };

/**
 * Tells every thread of a session what happened, through the thread replier of the thread's source.
 * Each thread has a cursor in the database (`replied_seq`), advanced only after its replier took
 * the events, so a crash or an outage delays a reply but never loses it; on start and on a timer
 * it catches up with threads that are behind. Threads are locked while replying (SKIP LOCKED),
 * so several processes never reply twice.
 */
export function startThreadNotifier(deps: ThreadNotifierDeps): ThreadNotifier {
  const notifier = new Notifier(deps);
  const { log } = deps;
  const unsubscribe = deps.bus.subscribe('*', notifier);
  const sweep = () => void notifier.sweep().catch((error: unknown) => log.warn({ err: error }, 'thread sweep failed'));
  const timer = setInterval(sweep, deps.sweepMs ?? 15_000);
  timer.unref();
  sweep();
  const refresher = setInterval(
    () => void notifier.refreshRunning().catch((error: unknown) => log.warn({ err: error }, 'thread refresh failed')),
    deps.refreshMs ?? Math.min(60_000, ...deps.repliers.map((r) => r.refreshEveryMs ?? 60_000)),
  );
  refresher.unref();
  return {
    flush: (sessionId) => notifier.flush(sessionId),
    async close() {
      unsubscribe();
      clearInterval(timer);
      clearInterval(refresher);
      await notifier.close();
    },
  };
}

/** A session as one pass read it, with its sub-tasks, before it locked the threads. */
type SessionAsRead = { session: SessionRecord; children: readonly SubtaskLine[] };

/** The notifier's work: replying to threads behind, refreshing caught-up ones, a sweep for both. */
class Notifier implements NoticeListener {
  readonly #deps: ThreadNotifierDeps;
  readonly #cursors: ThreadCursorStore;
  readonly #repliers: Repliers = {};
  /** Sources with a replier, and those whose replier refreshes. */
  readonly #sources: ThreadSource[];
  readonly #refreshing: ThreadSource[];
  readonly #stopping = new AbortController();
  readonly #slots: Slots;
  /** One pass per session at a time; a notice during one asks for one more after it. */
  readonly #passes: Coalescer<string>;
  /** Sessions whose children moved on since their last pass: that pass refreshes their caught-up threads too. */
  readonly #childrenMoved = new Set<string>();

  constructor(deps: ThreadNotifierDeps) {
    this.#deps = deps;
    this.#cursors = createThreadCursorStore(deps.db);
    for (const replier of deps.repliers) this.#repliers[replier.source] = replier;
    this.#sources = deps.repliers.map((r) => r.source);
    this.#refreshing = deps.repliers.filter((r) => r.refresh).map((r) => r.source);
    this.#slots = new Slots(deps.concurrency ?? 3);
    this.#passes = coalesce(
      (sessionId: string) =>
        this.#slots
          .use(() => this.#replyInThreads(sessionId))
          .catch((error: unknown) => deps.log.error({ err: error, sessionId }, 'thread reply failed')),
      { rerunIf: () => !this.#stopping.signal.aborted },
    );
  }

  /** An event was written to a session's log (the bus's `tellListeners`): its threads get a pass. */
  onNotice(notice: EventNotice): void {
    void this.flush(notice.sessionId);
    // A sub-task's line on its parent's messages follows these; the parent's threads are refreshed.
    if (subtaskLineTypes.has(notice.type)) void this.childMoved(notice.sessionId);
  }

  flush(sessionId: string): Promise<void> {
    return this.#passes.run(sessionId);
  }

  /**
   * A session's status (or branch, or pull request) changed: when it is a sub-task, its parent's
   * threads list it, so the parent gets a pass that refreshes them. Through the parent's own pass,
   * so a pass over the parent under way (which read the children before this) is followed by one
   * that reads them again.
   */
  async childMoved(sessionId: string): Promise<void> {
    if (this.#refreshing.length === 0) return;
    const child = await this.#deps.store.get(sessionId);
    if (!child?.parentId) return;
    this.#childrenMoved.add(child.parentId);
    await this.flush(child.parentId);
  }

  /** Catches up with sessions whose threads are behind (after a crash, an outage, a lost notice). */
  async sweep(): Promise<void> {
    if (this.#sources.length === 0) return;
    const behind = await this.#cursors.sessionsBehind(this.#sources, 100);
    await Promise.all(behind.map((sessionId) => this.flush(sessionId)));
  }

  /** Refreshes the caught-up threads of running sessions no pass is replying to right now. */
  async refreshRunning(): Promise<void> {
    if (this.#refreshing.length === 0) return;
    const running = await this.#cursors.runningSessions(this.#refreshing, 100);
    await Promise.all(
      running
        .filter((sessionId) => !this.#passes.running(sessionId))
        .map((sessionId) => this.#slots.use(() => this.#refreshRunning(sessionId))),
    );
  }

  async close(): Promise<void> {
    this.#stopping.abort();
    await this.#passes.settled();
  }

  async #replyInThreads(sessionId: string): Promise<void> {
    const childrenMoved = this.#childrenMoved.delete(sessionId);
    if (this.#sources.length === 0) return;
    const session = await this.#deps.store.get(sessionId);
    if (!session) return;
    // Read before the transaction, like the session: not on a second pooled connection inside it.
    const children = await this.#deps.store.children(sessionId);
    await this.#cursors.transaction(async (trx) => {
      for (const row of await this.#cursors.lock(trx, sessionId, this.#sources, 'behind', session.lastSeq)) {
        await this.#replyInThread(trx, { session, children }, row);
      }
    });
    if (childrenMoved) await this.#refreshThreads(session, children);
  }

  /** Tells one locked thread the events it has not been told, up to the session as read. */
  async #replyInThread(trx: Trx, read: SessionAsRead, row: LockedThread): Promise<void> {
    const { session, children } = read;
    const replier = this.#repliers[row.thread.source];
    if (!replier) return;
    // Read on the transaction's own connection: a second one from the pool, taken while this
    // one is held, deadlocks once every pooled connection belongs to a waiting pass.
    // Only up to the session as read above: a later event (the run's end) seen with this older
    // session would be told with stale fields (no result yet: "no changes"). It comes next flush.
    const events = (await this.#deps.store.events(session.id, { afterSeq: row.repliedSeq, trx })).filter(
      (e) => e.seq <= session.lastSeq,
    );
    if (events.length === 0) return;
    try {
      // Bounded: a hung replier must not hold the thread's lock and a connection for good.
      // The batch is then retried later; replies are idempotent per batch.
      const { state } = await this.#bounded(row.thread.source, (signal) =>
        replier.reply({ session, thread: row.thread, events, state: row.state, children, signal }),
      );
      await this.#cursors.save(trx, row.id, state, events.at(-1)!.seq);
    } catch (error) {
      this.#deps.log.warn(
        { err: error, sessionId: session.id, source: row.thread.source },
        'could not update the thread; will retry',
      );
    }
  }

  /** Refreshes the caught-up threads of one session if it is still running. */
  async #refreshRunning(sessionId: string): Promise<void> {
    const session = await this.#deps.store.get(sessionId);
    if (session?.status !== 'running') return;
    await this.#refreshThreads(session, await this.#deps.store.children(sessionId));
  }

  /**
   * Refreshes the threads of a session that were told every event up to the session as read;
   * threads busy with a pass, or told more than that read saw, are skipped.
   */
  async #refreshThreads(session: SessionRecord, children: readonly SubtaskLine[]): Promise<void> {
    if (this.#refreshing.length === 0) return;
    await this.#cursors.transaction(async (trx) => {
      for (const row of await this.#cursors.lock(trx, session.id, this.#refreshing, 'caught-up', session.lastSeq)) {
        const refresh = this.#repliers[row.thread.source]?.refresh;
        if (!refresh) continue;
        try {
          const { state } = await this.#bounded(row.thread.source, (signal) =>
            refresh({ session, thread: row.thread, state: row.state, children, signal }),
          );
          await this.#cursors.save(trx, row.id, state);
        } catch (error) {
          this.#deps.log.warn(
            { err: error, sessionId: session.id, source: row.thread.source },
            'could not refresh the thread',
          );
        }
      }
    });
  }

  /** Runs a replier call with a deadline, so a hung one cannot hold a thread's lock for good. */
  #bounded<T>(source: string, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const timeoutMs = this.#deps.replyTimeoutMs ?? 120_000;
    const signal = AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(timeoutMs)]);
    return Promise.race([
      call(signal),
      new Promise<never>((_, reject) =>
        signal.addEventListener(
          'abort',
          () => reject(new Error(`${source} did not take the update within ${timeoutMs / 1000} s`)),
          { once: true },
        ),
      ),
    ]);
  }
}

/** Bounds the work in flight, so a sweep of many sessions cannot take the whole pool. */
class Slots {
  readonly #limit: number;
  #active = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  async use<T>(work: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active += 1;
    try {
      return await work();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#active -= 1;
    }
  }
}
