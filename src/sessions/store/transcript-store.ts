import { sql } from 'kysely';
import type { Db } from '../../../db/database.ts';
import type { StoredEvent } from '../../core/events.ts';
import type { NewEvent, Step, TranscriptEntry } from '../../core/run-log.ts';
import type { ModelMessage, Usage } from '../../core/transcript.ts';
import { storeStepCheckpoint } from '../harness-stores/pg-checkpoint-store.ts';
import { appendEvents } from './event-log.ts';
import type { RunLease } from '../worker/run-leases.ts';
import { lockSession, patchColumns, usageIncrements, type Trx } from './session-lock.ts';

/** A transcript entry as a run writes it: the message and the event it came from, if any. */
type NewEntry = { message: ModelMessage; eventSeq?: number | null };

/** A session's transcript (`session_messages`) in order. */
export async function readTranscript(db: Db, sessionId: string): Promise<TranscriptEntry[]> {
  const rows = await db
    .selectFrom('session_messages')
    .select(['idx', 'message', 'event_seq'])
    .where('session_id', '=', sessionId)
    .orderBy('idx')
    .execute();
  return rows.map((r) => ({ idx: r.idx, message: r.message as ModelMessage, eventSeq: r.event_seq }));
}

/** Writes one step of a run atomically, with the checkpoint after its tool call, if any. */
export async function commitStep(db: Db, sessionId: string, step: Step, fence?: RunLease): Promise<StoredEvent[]> {
  return db.transaction().execute((trx) => writeStep(trx, sessionId, step, fence));
}

/** Writes one step of a run in the caller's transaction (session-children.ts writes children with it). */
export async function writeStep(trx: Trx, sessionId: string, step: Step, fence?: RunLease): Promise<StoredEvent[]> {
  await lockSession(trx, sessionId, fence, 'a step');
  if (step.checkpoint) await storeStepCheckpoint(trx, sessionId, step.checkpoint, fence);
  if (step.messages?.length) {
    const { next } = await trx
      .selectFrom('session_messages')
      .select(sql<number>`coalesce(max(idx) + 1, 0)::int`.as('next'))
      .where('session_id', '=', sessionId)
      .executeTakeFirstOrThrow();
    await insertEntries(trx, sessionId, step.messages, next);
  }
  const stored = await appendEvents(trx, sessionId, step.events ?? [], fence?.epoch);
  const set = { ...patchColumns(step.patch ?? {}), ...(step.usage && usageIncrements(step.usage)) };
  if (Object.keys(set).length) await trx.updateTable('sessions').set(set).where('id', '=', sessionId).execute();
  return stored;
}

/**
 * Replaces the transcript (after compaction) in one transaction, with its events and the usage
 * of the summarizing call, if any.
 */
export async function replaceTranscript(
  db: Db,
  sessionId: string,
  messages: NewEntry[],
  events: NewEvent[],
  usage?: Usage,
  fence?: RunLease,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await lockSession(trx, sessionId, fence, 'a compaction');
    await trx.deleteFrom('session_messages').where('session_id', '=', sessionId).execute();
    if (messages.length) await insertEntries(trx, sessionId, messages, 0);
    await appendEvents(trx, sessionId, events, fence?.epoch);
    if (usage) await trx.updateTable('sessions').set(usageIncrements(usage)).where('id', '=', sessionId).execute();
  });
}

/** Inserts transcript entries from index `first` on. */
async function insertEntries(trx: Trx, sessionId: string, entries: readonly NewEntry[], first: number): Promise<void> {
  await trx
    .insertInto('session_messages')
    .values(
      entries.map((m, i) => ({
        session_id: sessionId,
        idx: first + i,
        message: JSON.stringify(m.message),
        event_seq: m.eventSeq ?? null,
      })),
    )
    .execute();
}
