import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { PatchbayError } from '../core/errors.ts';
import { SessionEvent, type StoredEvent } from '../core/events.ts';
import { nextStatus, type SessionStatus, type SessionTrigger } from '../core/session-status.ts';
import { ThreadRef, threadKey } from '../core/thread-ref.ts';
import type {
  NewEvent,
  SessionPatch,
  Step,
  TranscriptEntry,
  TransitionOptions,
  TransitionResult,
} from '../core/run-log.ts';
import type { ModelMessage, Usage } from '../core/transcript.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { storeStepCheckpoint } from './checkpoint-store.ts';
import { leaseLost, type RunLease } from './run-leases.ts';
import { firstMessage, type NewSession } from './new-session.ts';
import { toSessionRecord } from './session-record.ts';
import { sessionEventsChannel } from './notify-channels.ts';

/** The channel events are announced on; the payload is `<sessionId>:<seq>:<type>`. */

type Trx = Transaction<Database>;

/** A webhook or event delivery, identified by its source's delivery id. */
export type Delivery = { source: string; id: string };

/** The delivery was recorded before: the write it came with was not made again. */
export class DuplicateDelivery extends Error {
  readonly delivery: Delivery;
  constructor(delivery: Delivery) {
    super(`delivery ${delivery.source}/${delivery.id} was handled before`);
    this.name = 'DuplicateDelivery';
    this.delivery = delivery;
  }
}

export type SessionStore = ReturnType<typeof createSessionStore>;

export function createSessionStore(db: Db) {
  /**
   * Takes the session's row lock. With `fence` (a run's lease), refuses when another run took the
   * session over: the lease's epoch is no longer the session's. A take-over moves the epoch under
   * this same row lock, so a write that passed the check lands before the take-over, never after.
   */
  async function lockSession(trx: Trx, sessionId: string, fence?: RunLease, what = 'a write') {
    const row = await trx.selectFrom('sessions').selectAll().where('id', '=', sessionId).forUpdate().executeTakeFirst();
    if (!row) throw new PatchbayError('not_found', `session ${sessionId} does not exist`);
    if (fence && Number(row.run_epoch) !== fence.epoch) throw leaseLost(fence, Number(row.run_epoch), what);
    return toSessionRecord(row);
  }

  /**
   * Appends events under the session's row lock (callers hold it). One round trip per event: the
   * dedupe check, the sequence number, the insert and the NOTIFY (delivered at commit) in one
   * statement. An event whose dedupe key is already in the log writes nothing.
   */
  async function appendEvents(trx: Trx, sessionId: string, events: NewEvent[], epoch?: number): Promise<StoredEvent[]> {
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

  /** Records a delivery id in the caller's transaction, or throws DuplicateDelivery when it was seen. */
  async function claimDelivery(trx: Trx, delivery: Delivery): Promise<void> {
    const row = await trx
      .insertInto('deliveries')
      .values({ source: delivery.source, delivery_id: delivery.id })
      .onConflict((oc) => oc.columns(['source', 'delivery_id']).doNothing())
      .returning('delivery_id')
      .executeTakeFirst();
    if (!row) throw new DuplicateDelivery(delivery);
  }

  async function hasUnreadMessages(trx: Trx, sessionId: string): Promise<boolean> {
    const row = await trx
      .selectFrom('session_events')
      .select('seq')
      .where('session_id', '=', sessionId)
      .where('type', '=', 'user-message')
      .where(
        'seq',
        '>',
        trx
          .selectFrom('session_messages')
          .select(sql<number>`coalesce(max(event_seq), 0)`.as('m'))
          .where('session_id', '=', sessionId),
      )
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  function patchColumns(patch: SessionPatch) {
    const json = (value: unknown) => (value == null ? null : JSON.stringify(value));
    return {
      ...(patch.branch !== undefined && { branch: patch.branch }),
      ...(patch.baseBranch !== undefined && { base_branch: patch.baseBranch }),
      ...(patch.pendingQuestion !== undefined && { pending_question: json(patch.pendingQuestion) }),
      ...(patch.result !== undefined && { result: json(patch.result) }),
      ...(patch.error !== undefined && { error: patch.error }),
    };
  }

  return {
    db,

    async create(input: NewSession): Promise<{ session: SessionRecord; events: StoredEvent[] }> {
      return db.transaction().execute(async (trx) => {
        if (input.delivery) await claimDelivery(trx, input.delivery);
        await trx
          .insertInto('sessions')
          .values({
            id: input.id,
            status: 'queued',
            repo: input.repo,
            prompt: input.prompt,
            title: input.title,
            requester: JSON.stringify(input.requester),
            base_branch: input.baseBranch ?? null,
            branch: input.branch ?? null,
          })
          .execute();
        await trx
          .insertInto('session_threads')
          .values({
            session_id: input.id,
            thread_key: threadKey(input.thread) ?? null,
            thread: JSON.stringify(input.thread),
          })
          .execute();
        const events = await appendEvents(trx, input.id, [
          {
            event: {
              type: 'session-created',
              repo: input.repo,
              prompt: input.prompt,
              actor: input.requester,
              thread: input.thread,
            },
          },
          { event: firstMessage(input) },
        ]);
        return { session: await lockSession(trx, input.id), events };
      });
    },

    async get(sessionId: string): Promise<SessionRecord | undefined> {
      const row = await db.selectFrom('sessions').selectAll().where('id', '=', sessionId).executeTakeFirst();
      return row && toSessionRecord(row);
    },

    async list(options: { limit?: number; status?: SessionStatus } = {}): Promise<SessionRecord[]> {
      let query = db
        .selectFrom('sessions')
        .selectAll()
        .orderBy('created_at', 'desc')
        .limit(options.limit ?? 50);
      if (options.status) query = query.where('status', '=', options.status);
      return (await query.execute()).map(toSessionRecord);
    },

    /** Queued sessions untouched for `seconds`: their run may never have reached the queue. */
    async idleQueued(seconds: number): Promise<string[]> {
      const rows = await db
        .selectFrom('sessions')
        .select('id')
        .where('status', '=', 'queued')
        .where('updated_at', '<', sql<Date>`now() - make_interval(secs => ${seconds})`)
        .limit(500)
        .execute();
      return rows.map((r) => r.id);
    },

    async findByThread(ref: ThreadRef): Promise<SessionRecord | undefined> {
      const key = threadKey(ref);
      if (!key) return undefined;
      const row = await db
        .selectFrom('session_threads')
        .innerJoin('sessions', 'sessions.id', 'session_threads.session_id')
        .selectAll('sessions')
        .where('session_threads.thread_key', '=', key)
        .executeTakeFirst();
      return row && toSessionRecord(row);
    },

    /** Binds another thread to the session; false when it was bound already. */
    async addThread(sessionId: string, ref: ThreadRef): Promise<boolean> {
      const key = threadKey(ref);
      return db.transaction().execute(async (trx) => {
        await lockSession(trx, sessionId);
        const inserted = await trx
          .insertInto('session_threads')
          .values({ session_id: sessionId, thread_key: key ?? null, thread: JSON.stringify(ref) })
          .onConflict((oc) => oc.column('thread_key').doNothing())
          .returning('id')
          .executeTakeFirst();
        if (!inserted) return false;
        await appendEvents(trx, sessionId, [{ event: { type: 'thread-added', thread: ref } }]);
        return true;
      });
    },

    async threads(sessionId: string): Promise<ThreadRef[]> {
      const rows = await db
        .selectFrom('session_threads')
        .select('thread')
        .where('session_id', '=', sessionId)
        .orderBy('id')
        .execute();
      return rows.map((r) => ThreadRef.parse(r.thread));
    },

    /** Appends events; with `delivery`, only once per delivery (DuplicateDelivery the second time). */
    async append(sessionId: string, events: NewEvent[], delivery?: Delivery): Promise<StoredEvent[]> {
      return db.transaction().execute(async (trx) => {
        if (delivery) await claimDelivery(trx, delivery);
        await lockSession(trx, sessionId);
        return appendEvents(trx, sessionId, events);
      });
    },

    /** A session's events in order. `trx` reads inside the caller's transaction, on its connection. */
    async events(
      sessionId: string,
      options: { afterSeq?: number; limit?: number; types?: string[]; trx?: Trx } = {},
    ): Promise<StoredEvent[]> {
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
    },

    /**
     * Applies a lifecycle trigger under the session's row lock. Returns the session after it and
     * whether the status changed; a trigger that does not apply changes nothing.
     */
    async transition(
      sessionId: string,
      trigger: SessionTrigger,
      options: TransitionOptions & { delivery?: Delivery; fence?: RunLease } = {},
    ): Promise<TransitionResult> {
      return db.transaction().execute(async (trx) => {
        if (options.delivery) await claimDelivery(trx, options.delivery);
        const current = await lockSession(trx, sessionId, options.fence, `the transition '${trigger}'`);
        const to = nextStatus(current.status, trigger);
        if (!to) return { session: current, applied: false, from: current.status };
        // Under the row lock a message is either in the log already (and refuses this) or lands
        // after the transition (and re-queues the session): none slips between a run and its end.
        if (options.unlessUnread && (await hasUnreadMessages(trx, sessionId))) {
          return { session: current, applied: false, from: current.status, unread: true };
        }
        await trx
          .updateTable('sessions')
          .set({ status: to, updated_at: sql`now()`, ...patchColumns(options.patch ?? {}) })
          .where('id', '=', sessionId)
          .execute();
        const events: NewEvent[] = [...(options.events ?? [])];
        if (to !== current.status) {
          events.push({
            event: {
              type: 'status-changed',
              from: current.status,
              to,
              ...(options.reason && { reason: options.reason }),
            },
          });
        }
        await appendEvents(trx, sessionId, events, options.fence?.epoch);
        return { session: await lockSession(trx, sessionId), applied: true, from: current.status };
      });
    },

    async transcript(sessionId: string): Promise<TranscriptEntry[]> {
      const rows = await db
        .selectFrom('session_messages')
        .select(['idx', 'message', 'event_seq'])
        .where('session_id', '=', sessionId)
        .orderBy('idx')
        .execute();
      return rows.map((r) => ({ idx: r.idx, message: r.message as ModelMessage, eventSeq: r.event_seq }));
    },

    /** Writes one step of a run atomically, with the checkpoint after its tool call, if any. */
    async commitStep(sessionId: string, step: Step, fence?: RunLease): Promise<StoredEvent[]> {
      return db.transaction().execute(async (trx) => {
        await lockSession(trx, sessionId, fence, 'a step');
        if (step.checkpoint) await storeStepCheckpoint(trx, sessionId, step.checkpoint, fence);
        if (step.messages?.length) {
          const { next } = await trx
            .selectFrom('session_messages')
            .select(sql<number>`coalesce(max(idx) + 1, 0)::int`.as('next'))
            .where('session_id', '=', sessionId)
            .executeTakeFirstOrThrow();
          await trx
            .insertInto('session_messages')
            .values(
              step.messages.map((m, i) => ({
                session_id: sessionId,
                idx: next + i,
                message: JSON.stringify(m.message),
                event_seq: m.eventSeq ?? null,
              })),
            )
            .execute();
        }
        const stored = await appendEvents(trx, sessionId, step.events ?? [], fence?.epoch);
        const usage = step.usage;
        const set = {
          ...patchColumns(step.patch ?? {}),
          ...(usage && {
            input_tokens: sql<number>`input_tokens + ${usage.inputTokens}`,
            output_tokens: sql<number>`output_tokens + ${usage.outputTokens}`,
            cache_read_tokens: sql<number>`cache_read_tokens + ${usage.cacheReadTokens}`,
            cache_write_tokens: sql<number>`cache_write_tokens + ${usage.cacheWriteTokens}`,
          }),
        };
        if (Object.keys(set).length) await trx.updateTable('sessions').set(set).where('id', '=', sessionId).execute();
        return stored;
      });
    },

    /**
     * Replaces the transcript (after compaction) in one transaction, with its events and the usage
     * of the summarizing call, if any.
     */
    async replaceTranscript(
      sessionId: string,
      messages: { message: ModelMessage; eventSeq?: number | null }[],
      events: NewEvent[],
      usage?: Usage,
      fence?: RunLease,
    ): Promise<void> {
      await db.transaction().execute(async (trx) => {
        await lockSession(trx, sessionId, fence, 'a compaction');
        await trx.deleteFrom('session_messages').where('session_id', '=', sessionId).execute();
        if (messages.length) {
          await trx
            .insertInto('session_messages')
            .values(
              messages.map((m, idx) => ({
                session_id: sessionId,
                idx,
                message: JSON.stringify(m.message),
                event_seq: m.eventSeq ?? null,
              })),
            )
            .execute();
        }
        await appendEvents(trx, sessionId, events, fence?.epoch);
        if (usage) {
          await trx
            .updateTable('sessions')
            .set({
              input_tokens: sql<number>`input_tokens + ${usage.inputTokens}`,
              output_tokens: sql<number>`output_tokens + ${usage.outputTokens}`,
              cache_read_tokens: sql<number>`cache_read_tokens + ${usage.cacheReadTokens}`,
              cache_write_tokens: sql<number>`cache_write_tokens + ${usage.cacheWriteTokens}`,
            })
            .where('id', '=', sessionId)
            .execute();
        }
      });
    },

    /** Records a webhook or event delivery id; false when it was seen before. */
    async recordDelivery(source: string, deliveryId: string): Promise<boolean> {
      const row = await db
        .insertInto('deliveries')
        .values({ source, delivery_id: deliveryId })
        .onConflict((oc) => oc.columns(['source', 'delivery_id']).doNothing())
        .returning('delivery_id')
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}
