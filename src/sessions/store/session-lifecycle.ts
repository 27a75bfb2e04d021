import { sql } from 'kysely';
import type { Db } from '../../../db/database.ts';
import type { Actor } from '../../core/actor.ts';
import type { AttachmentRef } from '../../core/attachment.ts';
import type { Autonomy } from '../../core/autonomy.ts';
import type { SessionEvent, StoredEvent } from '../../core/events.ts';
import type { NewEvent, TransitionOptions, TransitionResult } from '../../core/run-log.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import { nextStatus, type SessionTrigger } from '../../core/session-status.ts';
import type { ThreadRef } from '../../core/thread-ref.ts';
import { claimMarker, type RequestMarker } from './request-markers.ts';
import { appendEvents } from './event-log.ts';
import type { RunLease } from '../worker/run-leases.ts';
import { lockSession, patchColumns, type Trx } from './session-lock.ts';
import { insertFirstThread } from './session-threads.ts';

/** What a new session starts from. */
export type NewSession = {
  id: string;
  repo: string;
  prompt: string;
  title: string;
  requester: Actor;
  thread: ThreadRef;
  baseBranch?: string;
  branch?: string;
  /** Pictures attached to the task. */
  attachments?: AttachmentRef[] | undefined;
  /** The autonomy the requester's words asked for, already removed from `prompt`. */
  autonomy?: Autonomy | undefined;
  /** Recorded in the same transaction: a redelivery finds it and creates nothing. */
  marker?: RequestMarker;
};

/** The task as the session's first message, with its pictures. */
function firstMessage(input: NewSession): SessionEvent {
  const { requester: actor, prompt: text, attachments } = input;
  return { type: 'user-message', actor, text, ...(attachments?.length && { attachments }) };
}

/** Creates a queued session bound to its first thread, with its first two events, in one transaction. */
export async function createSession(
  db: Db,
  input: NewSession,
): Promise<{ session: SessionRecord; events: StoredEvent[] }> {
  return db.transaction().execute(async (trx) => {
    if (input.marker) await claimMarker(trx, input.marker);
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
    await insertFirstThread(trx, input.id, input.thread);
    const events = await appendEvents(trx, input.id, [
      {
        event: {
          type: 'session-created',
          repo: input.repo,
          prompt: input.prompt,
          actor: input.requester,
          thread: input.thread,
          ...(input.autonomy && { autonomy: input.autonomy }),
        },
      },
      { event: firstMessage(input) },
    ]);
    return { session: await lockSession(trx, input.id), events };
  });
}

/** How a transition is made: the store's own options beside the run log's. */
export type StoreTransitionOptions = TransitionOptions & { marker?: RequestMarker; fence?: RunLease };

/**
 * Applies a lifecycle trigger under the session's row lock. Returns the session after it and
 * whether the status changed; a trigger that does not apply changes nothing.
 */
export async function transitionSession(
  db: Db,
  sessionId: string,
  trigger: SessionTrigger,
  options: StoreTransitionOptions = {},
): Promise<TransitionResult> {
  return db.transaction().execute(async (trx) => {
    if (options.marker) await claimMarker(trx, options.marker);
    const current = await lockSession(trx, sessionId, options.fence, `the transition '${trigger}'`);
    return applyTrigger(trx, current, trigger, options);
  });
}

/**
 * The transition itself, for a caller that already holds the session's row lock (`current` is
 * what it read under it): the status the pure table gives, its `status-changed` event and the
 * caller's events, in the caller's transaction.
 */
export async function applyTrigger(
  trx: Trx,
  current: SessionRecord,
  trigger: SessionTrigger,
  options: Omit<StoreTransitionOptions, 'marker'> = {},
): Promise<TransitionResult> {
  const to = nextStatus(current.status, trigger);
  if (!to) return { session: current, applied: false, from: current.status };
  // Under the row lock a message is either in the log already (and refuses this) or lands
  // after the transition (and re-queues the session): none slips between a run and its end.
  if (options.unlessUnread && (await hasUnreadMessages(trx, current.id))) {
    return { session: current, applied: false, from: current.status, unread: true };
  }
  await trx
    .updateTable('sessions')
    .set({ status: to, updated_at: sql`now()`, ...patchColumns(options.patch ?? {}) })
    .where('id', '=', current.id)
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
  await appendEvents(trx, current.id, events, options.fence?.epoch);
  return { session: await lockSession(trx, current.id), applied: true, from: current.status };
}

/** Whether a user message is in the log that no transcript entry has taken in yet. */
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
