import { type Kysely, sql, type Transaction } from 'kysely';
import type { ArgsAfterDb } from '../../../db/database.ts';
import type { Database } from '../../../db/schema.ts';
import { ThreadRef, type ThreadSource } from '../../core/thread-ref.ts';

export type Trx = Transaction<Database>;

/** A session's thread as the notifier holds it while replying: where it is and how far it was told. */
export type LockedThread = { id: number; thread: ThreadRef; repliedSeq: number; state: unknown };

export type ThreadCursorStore = ReturnType<typeof createThreadCursorStore>;

/**
 * The thread notifier's SQL on `session_threads`: each thread's cursor (`replied_seq`) and its
 * replier's state, locked while a reply is under way so several processes never reply twice.
 */
export function createThreadCursorStore(db: Kysely<Database>) {
  return {
    transaction: <T>(work: (trx: Trx) => Promise<T>) => transaction(db, work),
    lock,
    save,
    sessionsBehind: (...args: ArgsAfterDb<typeof sessionsBehind>) => sessionsBehind(db, ...args),
    runningSessions: (...args: ArgsAfterDb<typeof runningSessions>) => runningSessions(db, ...args),
  };
}

/** Runs `work` in one transaction: the locks it takes are held until it returns. */
function transaction<T>(db: Kysely<Database>, work: (trx: Trx) => Promise<T>): Promise<T> {
  return db.transaction().execute(work);
}

/**
 * Locks a session's threads of `from` sources: those behind the log (to reply to) or caught up
 * with it (to refresh). Threads another process holds are skipped, not waited for. Caught up
 * means told exactly up to `lastSeq`: a thread told more than the caller's read of the session
 * saw (a pass committed since) is not refreshed with that older read.
 */
async function lock(
  trx: Trx,
  sessionId: string,
  from: readonly ThreadSource[],
  which: 'behind' | 'caught-up',
  lastSeq: number,
): Promise<LockedThread[]> {
  const rows = await trx
    .selectFrom('session_threads')
    .select(['id', 'thread', 'replied_seq', 'state'])
    .where('session_id', '=', sessionId)
    .where('replied_seq', which === 'behind' ? '<' : '=', lastSeq)
    .where(sql<string>`thread->>'source'`, 'in', from)
    .forUpdate()
    .skipLocked()
    .execute();
  return rows.map((row) => ({
    id: row.id,
    thread: ThreadRef.parse(row.thread),
    repliedSeq: row.replied_seq,
    state: row.state ?? undefined,
  }));
}

/** Keeps the replier's state, and advances the cursor when events were told. */
async function save(trx: Trx, id: number, state: unknown, repliedSeq?: number): Promise<void> {
  await trx
    .updateTable('session_threads')
    .set({
      state: state === undefined ? null : JSON.stringify(state),
      ...(repliedSeq !== undefined && { replied_seq: repliedSeq }),
    })
    .where('id', '=', id)
    .execute();
}

/** Up to `limit` sessions with a thread of `from` sources that is behind the session's log. */
async function sessionsBehind(db: Kysely<Database>, from: readonly ThreadSource[], limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('session_threads')
    .innerJoin('sessions', 'sessions.id', 'session_threads.session_id')
    .select('sessions.id')
    .distinct()
    .where(sql<boolean>`session_threads.replied_seq < sessions.last_seq`)
    .where(sql<string>`session_threads.thread->>'source'`, 'in', from)
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}

/** Up to `limit` running sessions with a thread of `from` sources. */
async function runningSessions(db: Kysely<Database>, from: readonly ThreadSource[], limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('session_threads')
    .innerJoin('sessions', 'sessions.id', 'session_threads.session_id')
    .select('sessions.id')
    .distinct()
    .where('sessions.status', '=', 'running')
    .where(sql<string>`session_threads.thread->>'source'`, 'in', from)
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}
