import { sql } from 'kysely';
import type { Db } from '../../../db/database.ts';
import { SessionEvent, type StoredEvent } from '../../core/events.ts';
import type { NewEvent } from '../../core/run-log.ts';
import { claimMarker, type RequestMarker } from './request-markers.ts';
import { sessionEventsChannel } from '../notify/event-bus.ts';
import { lockSession, type Trx } from './session-lock.ts';

/**
 * Appends events under the session's row lock (callers hold it). One round trip per event: the
 * dedupe check, the sequence number, the insert and the NOTIFY (delivered at commit) in one
 * statement. An event whose dedupe key is already in the log writes nothing.
 */
export async function appendEvents(
  trx: Trx,
  sessionId: string,
  events: NewEvent[],
  epoch?: number,
): Promise<StoredEvent[]> {
  const stored: StoredEvent[] = [];
  for (const { event, dedupeKey } of events) {
    const parsed = SessionEvent.parse(event);
    const key = dedupeKey ?? null;
    const { rows } = await sql<{ seq: number; at: Date }>`
      with next as (
        update sessions set last_seq = last_seq + 1, updated_at = now()
        where id = ${sessionId}
          and (${key}::text is null
            or not exists (select 1 from session_events where session_id = ${sessionId} and dedupe_key = ${key}::text))
        returning last_seq
      ), inserted as (
        insert into session_events (session_id, seq, type, data, dedupe_key, run_epoch)
        select ${sessionId}, last_seq, ${parsed.type}, ${JSON.stringify(parsed)}::jsonb, ${key}::text, ${epoch ?? null}::bigint from next
        returning seq, at
      )
      select seq, at, pg_notify(${sessionEventsChannel.name}, json_build_object('sessionId', ${sessionId}::text, 'seq', seq, 'type', ${parsed.type}::text)::text) from inserted`.execute(
      trx,
    );
    const row = rows[0];
    if (row) stored.push({ sessionId, seq: row.seq, at: row.at.toISOString(), event: parsed });
  }
  return stored;
}

/** Appends events; with `marker`, only once per request (DuplicateRequest the second time). */
export async function appendToLog(
  db: Db,
  sessionId: string,
  events: NewEvent[],
  marker?: RequestMarker,
): Promise<StoredEvent[]> {
  return db.transaction().execute(async (trx) => {
    if (marker) await claimMarker(trx, marker);
    await lockSession(trx, sessionId);
    return appendEvents(trx, sessionId, events);
  });
}

/** What part of a session's log to read. `trx` reads inside the caller's transaction, on its connection. */
export type EventQuery = { afterSeq?: number; limit?: number; types?: string[]; trx?: Trx };

/** A session's events in order. */
export async function readEvents(db: Db, sessionId: string, options: EventQuery = {}): Promise<StoredEvent[]> {
  let query = (options.trx ?? db)
    .selectFrom('session_events')
    .select(['seq', 'at', 'data'])
    .where('session_id', '=', sessionId)
    .where('seq', '>', options.afterSeq ?? 0)
    .orderBy('seq')
    .limit(options.limit ?? 10_000);
  if (options.types?.length) query = query.where('type', 'in', options.types);
  const rows = await query.execute();
  return rows.map((r) => ({ sessionId, seq: r.seq, at: r.at.toISOString(), event: SessionEvent.parse(r.data) }));
}
