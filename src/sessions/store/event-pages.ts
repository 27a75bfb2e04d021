import { sql } from 'kysely';
import type { Db } from '../../../db/database.ts';
import { SessionEvent, type SessionEventType, type StoredEvent } from '../../core/events.ts';
import type { Usage } from '../../core/transcript.ts';

/** One page of a session's log, oldest first; `nextBefore` is the cursor for the page before it. */
export type EventPage = { events: StoredEvent[]; nextBefore: number | null };

/**
 * The `limit` events before seq `before` (the newest when absent), newest first on the primary
 * key (session_id, seq), returned oldest first. One row more than asked says whether there are
 * older ones, so a reader never asks for a page that turns out empty. Only the page is read and
 * validated, however long the log.
 */
export async function readEventPage(
  db: Db,
  sessionId: string,
  options: { before?: number; limit: number; types?: readonly SessionEventType[] },
): Promise<EventPage> {
  let query = db
    .selectFrom('session_events')
    .select(['seq', 'at', 'data'])
    .where('session_id', '=', sessionId)
    .orderBy('seq', 'desc')
    .limit(options.limit + 1);
  if (options.before !== undefined) query = query.where('seq', '<', options.before);
  if (options.types?.length) query = query.where('type', 'in', options.types);
  const rows = await query.execute();
  const more = rows.length > options.limit;
  const page = rows.slice(0, options.limit).reverse();
  return {
    events: page.map((r) => ({ sessionId, seq: r.seq, at: r.at.toISOString(), event: SessionEvent.parse(r.data) })),
    nextBefore: more && page[0] ? page[0].seq : null,
  };
}

/** A session's tokens per model, summed by the database from its `usage` events (none are read here). */
export async function readUsageByModel(db: Db, sessionId: string): Promise<{ model: string; usage: Usage }[]> {
  const total = (field: string) => sql<string>`coalesce(sum((data->>${field})::bigint), 0)`;
  const rows = await db
    .selectFrom('session_events')
    .select([
      sql<string>`data->>'model'`.as('model'),
      total('inputTokens').as('input'),
      total('outputTokens').as('output'),
      total('cacheReadTokens').as('cacheRead'),
      total('cacheWriteTokens').as('cacheWrite'),
    ])
    .where('session_id', '=', sessionId)
    .where('type', '=', 'usage')
    .groupBy(sql`data->>'model'`)
    .orderBy(sql`min(seq)`)
    .execute();
  return rows.map((r) => ({
    model: r.model,
    usage: {
      inputTokens: Number(r.input),
      outputTokens: Number(r.output),
      cacheReadTokens: Number(r.cacheRead),
      cacheWriteTokens: Number(r.cacheWrite),
    },
  }));
}
