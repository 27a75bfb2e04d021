import type { Db } from '../../../db/database.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import { ThreadRef, threadKey } from '../../core/thread-ref.ts';
import { appendEvents } from './event-log.ts';
import { lockSession, type Trx } from './session-lock.ts';
import { toSessionRecord } from './session-row.ts';

/**
 * Binds the first thread of a new session in the caller's transaction. Unlike `addThread` a thread
 * bound already is an error here: it belongs to another session.
 */
export async function insertFirstThread(trx: Trx, sessionId: string, ref: ThreadRef): Promise<void> {
  await trx
    .insertInto('session_threads')
    .values({ session_id: sessionId, thread_key: threadKey(ref) ?? null, thread: JSON.stringify(ref) })
    .execute();
}

/** The session a thread is bound to, if any (threads without a key, web and CLI, are bound to none). */
export async function findSessionByThread(db: Db, ref: ThreadRef): Promise<SessionRecord | undefined> {
  const key = threadKey(ref);
  if (!key) return undefined;
  const row = await db
    .selectFrom('session_threads')
    .innerJoin('sessions', 'sessions.id', 'session_threads.session_id')
    .selectAll('sessions')
    .where('session_threads.thread_key', '=', key)
    .executeTakeFirst();
  return row && toSessionRecord(row);
}

/** Binds another thread to the session, with its `thread-added` event; false when it was bound already. */
export async function addThread(db: Db, sessionId: string, ref: ThreadRef): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await lockSession(trx, sessionId);
    const inserted = await trx
      .insertInto('session_threads')
      .values({ session_id: sessionId, thread_key: threadKey(ref) ?? null, thread: JSON.stringify(ref) })
      .onConflict((oc) => oc.column('thread_key').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return false;
    await appendEvents(trx, sessionId, [{ event: { type: 'thread-added', thread: ref } }]);
    return true;
  });
}

/** The threads of a session, in the order they were bound. */
export async function listThreads(db: Db, sessionId: string): Promise<ThreadRef[]> {
  const rows = await db
    .selectFrom('session_threads')
    .select('thread')
    .where('session_id', '=', sessionId)
    .orderBy('id')
    .execute();
  return rows.map((r) => ThreadRef.parse(r.thread));
}
