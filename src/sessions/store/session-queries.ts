import { sql } from 'kysely';
import type { Db } from '../../../db/database.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import type { SessionStatus } from '../../core/session-status.ts';
import { toSessionRecord } from './session-row.ts';

/** One session, if it exists. */
export async function getSession(db: Db, sessionId: string): Promise<SessionRecord | undefined> {
  const row = await db.selectFrom('sessions').selectAll().where('id', '=', sessionId).executeTakeFirst();
  return row && toSessionRecord(row);
}

/** Sessions newest first, of one status and one repository when given. */
export async function listSessions(
  db: Db,
  options: { limit?: number; status?: SessionStatus; repo?: string } = {},
): Promise<SessionRecord[]> {
  let query = db
    .selectFrom('sessions')
    .selectAll()
    .orderBy('created_at', 'desc')
    .limit(options.limit ?? 50);
  if (options.status) query = query.where('status', '=', options.status);
  if (options.repo) query = query.where('repo', '=', options.repo);
  return (await query.execute()).map(toSessionRecord);
}

/** Queued sessions untouched for `seconds`: their run may never have reached the queue. */
export async function idleQueued(db: Db, seconds: number): Promise<string[]> {
  const rows = await db
    .selectFrom('sessions')
    .select('id')
    .where('status', '=', 'queued')
    .where('updated_at', '<', sql<Date>`now() - make_interval(secs => ${seconds})`)
    .limit(500)
    .execute();
  return rows.map((r) => r.id);
}

/** Waiting sessions whose approval request expired by `now`: their run records the expiry. */
export async function expiredApprovals(db: Db, now: Date): Promise<string[]> {
  const rows = await db
    .selectFrom('sessions')
    .select('id')
    .where('status', '=', 'waiting')
    .where(sql<string>`pending_question->'approval'->>'expiresAt'`, '<=', now.toISOString())
    .execute();
  return rows.map((r) => r.id);
}

/**
 * The epoch of the run that holds the session now (run-leases.ts); undefined when there is no such
 * session. With `lock` (in a transaction), under the session's row lock: a take-over, which moves
 * the epoch, waits for the transaction, so a write that passed this check lands before it.
 */
export async function currentRunEpoch(
  db: Db,
  sessionId: string,
  options: { lock?: boolean } = {},
): Promise<number | undefined> {
  const query = db.selectFrom('sessions').select('run_epoch').where('id', '=', sessionId);
  const row = await (options.lock ? query.forUpdate() : query).executeTakeFirst();
  return row ? Number(row.run_epoch) : undefined;
}

/** Where a queued session stands in the line (`sessions.queued_at`); undefined when it is not queued. */
export type QueueStanding = { since: Date; ahead: number; running: number };

/** Where a queued session stands: since when, how many queued before it, how many running. */
export async function queueStanding(db: Db, sessionId: string): Promise<QueueStanding | undefined> {
  const row = await db
    .selectFrom('sessions as s')
    .select([
      's.queued_at',
      sql<string>`(select count(*) from sessions q where q.status = 'queued' and q.queued_at < s.queued_at)`.as(
        'ahead',
      ),
      sql<string>`(select count(*) from sessions r where r.status = 'running')`.as('running'),
    ])
    .where('s.id', '=', sessionId)
    .where('s.status', '=', 'queued')
    .executeTakeFirst();
  if (!row?.queued_at) return undefined;
  return { since: new Date(row.queued_at), ahead: Number(row.ahead), running: Number(row.running) };
}

/** Sessions queued for longer than `seconds` and not yet told in this wait where they stand, oldest first. */
export async function untoldWaiting(db: Db, seconds: number): Promise<string[]> {
  const rows = await db
    .selectFrom('sessions')
    .select('id')
    .where('status', '=', 'queued')
    .where('queued_at', '<', sql<Date>`now() - make_interval(secs => ${seconds})`)
    // Told already in this wait: nothing new to say.
    .where(
      sql<boolean>`not exists (select 1 from session_events e where e.session_id = sessions.id and e.type = 'queue-waiting' and e.at >= sessions.queued_at)`,
    )
    .orderBy('queued_at')
    .limit(200)
    .execute();
  return rows.map((r) => r.id);
}

/** Whether the database answers at all (a run that failed may have lost it). */
export function databaseAnswers(db: Db): Promise<boolean> {
  return sql`select 1`.execute(db).then(
    () => true,
    () => false,
  );
}
