import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../../../db/database.ts';
import type { Actor } from '../../core/actor.ts';
import type { EventOf, StoredEvent } from '../../core/events.ts';
import type { NewEvent, Step } from '../../core/run-log.ts';
import { PendingQuestion, SessionResult, type SessionRecord } from '../../core/session-record.ts';
import { isTerminal, SessionStatus } from '../../core/session-status.ts';
import { relayedId } from '../../core/relayed-approval.ts';
import type { NewChild, SubtaskLine } from '../../core/subtasks.ts';
import type { ThreadRef } from '../../core/thread-ref.ts';
import { appendEvents, readEvents } from '../store/event-log.ts';
import { applyTrigger } from '../store/session-lifecycle.ts';
import type { RunLease } from '../worker/run-leases.ts';
import type { RunQueue } from '../worker/run-queue.ts';
import { lockSession, type Trx } from '../store/session-lock.ts';
import type { SessionStore } from '../store/session-store.ts';
import { insertFirstThread } from '../store/session-threads.ts';
import { writeStep } from '../store/transcript-store.ts';

/** A spawn_subtasks call's children and the parent's step that records them, written together. */
export type ChildSpawn = {
  /** The spawning tool call: with the index, what makes a child unique. */
  callId: string;
  requester: Actor;
  children: NewChild[];
  /** The thread each child is bound to: its own page (the parent's threads stay the parent's). */
  thread: ThreadRef;
  /** The parent's step (its subtasks-spawned event), in the same transaction. */
  step: Step;
  fence?: RunLease | undefined;
};

/**
 * Creates a spawn call's child sessions, queued, with the parent's step, in one transaction under
 * the parent's row lock. A child already created by this call (a replay after a crash) is kept,
 * not made again. Returns the call's children and the ids created now (the caller enqueues every
 * child still queued: a crash before its enqueue is caught by the idle-queued sweep).
 */
export async function spawnChildren(
  db: Db,
  parentId: string,
  spawn: ChildSpawn,
): Promise<{ children: SubtaskLine[]; created: string[]; events: StoredEvent[] }> {
  return db.transaction().execute(async (trx) => {
    const events = await writeStep(trx, parentId, spawn.step, spawn.fence);
    const created: string[] = [];
    for (const child of spawn.children) {
      if (await insertChild(trx, parentId, spawn, child)) created.push(child.id);
    }
    return { children: await readChildren(trx, parentId, spawn.callId), created, events };
  });
}

/** Inserts one child with its thread and first events; false when the call created it before. */
async function insertChild(trx: Trx, parentId: string, spawn: ChildSpawn, child: NewChild): Promise<boolean> {
  const inserted = await trx
    .insertInto('sessions')
    .values({
      id: child.id,
      status: 'queued',
      repo: child.repo,
      prompt: child.prompt,
      title: child.title,
      requester: JSON.stringify(spawn.requester),
      base_branch: child.baseBranch ?? null,
      branch: child.branch,
      parent_session_id: parentId,
      subtask_index: child.index,
      subtask_title: child.title,
      spawn_call_id: spawn.callId,
    })
    .onConflict((oc) => oc.columns(['parent_session_id', 'spawn_call_id', 'subtask_index']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) return false;
  await insertFirstThread(trx, child.id, spawn.thread);
  const actor = spawn.requester;
  await appendEvents(trx, child.id, [
    { event: { type: 'session-created', repo: child.repo, prompt: child.prompt, actor, thread: spawn.thread } },
    { event: { type: 'user-message', actor, text: child.prompt } },
  ]);
  return true;
}

/** A session's children in their order (one spawn call's when `callId` is given). */
export function listChildren(db: Db, parentId: string, callId?: string): Promise<SubtaskLine[]> {
  return readChildren(db, parentId, callId);
}

async function readChildren(db: Db | Trx, parentId: string, callId?: string): Promise<SubtaskLine[]> {
  let query = db
    .selectFrom('sessions')
    .select(['id', 'subtask_index', 'subtask_title', 'repo', 'status', 'branch', 'result', 'error'])
    .where('parent_session_id', '=', parentId)
    .orderBy('created_at')
    .orderBy('subtask_index');
  if (callId) query = query.where('spawn_call_id', '=', callId);
  const rows = await query.execute();
  return rows.map((row) => {
    const result = row.result == null ? null : SessionResult.parse(row.result);
    return {
      sessionId: row.id,
      index: row.subtask_index ?? 0,
      title: row.subtask_title ?? '',
      repo: row.repo,
      status: SessionStatus.parse(row.status),
      branch: row.branch,
      ...(result?.commit && { commit: result.commit }),
      ...(result?.prUrl && { prUrl: result.prUrl }),
      ...(row.error && { error: row.error }),
    };
  });
}

/** What a child's end or pause asks of its parent: to be queued again, or nothing. */
export type ChildNotice = { parentId: string; parentReady: boolean };

/**
 * After a run of a child session, under the parent's row lock: a child that ended is noted on the
 * parent's log (once), a question it asked is asked in the parent's log too (its threads are the
 * people's), so are its approval requests and their decisions (relayedApprovals, below), and when every child has ended the parent, waiting on them, is queued
 * again (the caller asks for its run). Each child checks after its own end was written and the
 * checks take turns under the lock, so the last child to end always sees every sibling ended.
 */
export async function noteChildRun(db: Db, childId: string): Promise<ChildNotice | undefined> {
  return db.transaction().execute(async (trx) => {
    const child = await trx.selectFrom('sessions').selectAll().where('id', '=', childId).executeTakeFirst();
    if (!child?.parent_session_id || !child.spawn_call_id || !child.subtask_index) return undefined;
    const parentId = child.parent_session_id;
    const parent = await lockSession(trx, parentId);
    const status = SessionStatus.parse(child.status);
    const index = child.subtask_index;
    const events: NewEvent[] = [];
    if (isTerminal(status))
      events.push({
        event: { type: 'subtask-ended', sessionId: childId, index, status },
        dedupeKey: `subtask-ended:${childId}`,
      });
    const question = child.pending_question == null ? null : PendingQuestion.parse(child.pending_question);
    if (status === 'waiting' && question && !question.approval) events.push(relayedQuestion(child, question));
    events.push(...(await relayedApprovals(trx, child, status === 'waiting' ? question : null)));
    await appendEvents(trx, parentId, events);
    return { parentId, parentReady: await queueIfChildrenEnded(trx, parent) };
  });
}

/**
 * Queues a parent waiting on its children once every one has ended; true when it did (the caller
 * asks for its run). For the parent's own run too: a child may have ended while the parent was
 * still on its way to waiting, when its look found the parent running.
 */
export async function wakeParent(db: Db, parentId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => queueIfChildrenEnded(trx, await lockSession(trx, parentId)));
}

/** Under the parent's row lock: waiting on children (no question open), all of them ended, so queued now. */
async function queueIfChildrenEnded(trx: Trx, parent: SessionRecord): Promise<boolean> {
  if (parent.status !== 'waiting' || parent.pendingQuestion) return false;
  const children = await readChildren(trx, parent.id);
  if (children.length === 0 || !children.every((c) => isTerminal(c.status))) return false;
  const { applied } = await applyTrigger(trx, parent, 'enqueue', { reason: 'every sub-task ended' });
  return applied;
}

/** A child's question as its parent's threads show it; answers there are routed to the child (session-service.ts). */
function relayedQuestion(
  child: { id: string; subtask_index: number | null; subtask_title: string | null },
  question: PendingQuestion,
): NewEvent {
  const questionId = relayedId(child.id, question.questionId);
  return {
    event: {
      type: 'question-asked',
      questionId,
      question: `Sub-task ${child.subtask_index} (${child.subtask_title}) asks: ${question.question}`,
      ...(question.choices && { choices: question.choices }),
      ...(question.recommended && { recommended: question.recommended }),
    },
    dedupeKey: `subtask-question:${questionId}`,
  };
}

/**
 * Parents waiting on children that have all ended: a crash between a child's end and its parent's
 * wake-up left them there. The worker's sweep queues them again.
 */
export async function readyParents(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom('sessions as p')
    .select('p.id')
    .where('p.status', '=', 'waiting')
    .where('p.pending_question', 'is', null)
    .where(sql<boolean>`exists (select 1 from sessions c where c.parent_session_id = p.id)`)
    .where(
      sql<boolean>`not exists (select 1 from sessions c where c.parent_session_id = p.id and c.status in ('queued', 'running', 'waiting'))`,
    )
    .limit(200)
    .execute();
  return rows.map((r) => r.id);
}

/** The child as its parent's log names it. */
type ChildNames = { id: string; subtask_index: number | null; subtask_title: string | null };

/**
 * A sub-task's approval requests as its parent's log shows them: the one it waits on
 * now, under the relayed id (relayedId) and with a reason that names the sub-task, and every
 * decision of a relayed request, however it came (a person in the parent's thread, an expiry, a
 * reply instead of a decision), so the parent's threads close what they showed. Dedupe keys make
 * each one once, whichever of the child's runs notes it.
 */
export async function relayedApprovals(
  trx: Trx,
  child: ChildNames,
  question: PendingQuestion | null,
): Promise<NewEvent[]> {
  const events = await readEvents(trx, child.id, {
    types: ['approval-requested', 'approval-decided'],
    trx,
  });
  const relayed: NewEvent[] = [];
  const open = question?.approval?.requestId;
  for (const { event } of events) {
    if (event.type === 'approval-requested' && event.requestId === open) relayed.push(relayedRequest(child, event));
    if (event.type === 'approval-decided') {
      const requestId = relayedId(child.id, event.requestId);
      relayed.push({ event: { ...event, requestId }, dedupeKey: `approval-decided:${requestId}` });
    }
  }
  return relayed;
}

function relayedRequest(child: ChildNames, event: EventOf<'approval-requested'>): NewEvent {
  const requestId = relayedId(child.id, event.requestId);
  const named = `Sub-task ${child.subtask_index} (${child.subtask_title}) holds this command.`;
  return {
    event: { ...event, requestId, reasons: [named, ...event.reasons] },
    dedupeKey: `approval-requested:${requestId}`,
  };
}

type WakeupDeps = { store: SessionStore; queue: Pick<RunQueue, 'enqueue'>; log: Logger };

/**
 * After every run of a session, however it ended (session-worker.ts): a sub-task's end or question
 * reaches its parent's log, and a parent whose children have all ended is queued and its run asked
 * for. A parent looks at its own children too: the last child may have ended while the parent was
 * still on its way to waiting. Never throws: the sweep below catches what a failure here leaves.
 */
export async function afterRun(deps: WakeupDeps, sessionId: string): Promise<void> {
  const { store, queue, log } = deps;
  try {
    const notice = await store.noteChildRun(sessionId);
    if (notice?.parentReady) await queue.enqueue(notice.parentId);
    if (!notice && (await store.wakeParent(sessionId))) await queue.enqueue(sessionId);
  } catch (error) {
    log.warn({ err: error, sessionId }, 'could not tell the parent session of a sub-task; the sweep will');
  }
}

/**
 * Parents left waiting on children that have all ended (the process died between a child's end
 * and the wake-up): queued again, with their runs asked for. Run by the worker's sweep at start
 * and every minute after.
 */
export async function wakeReadyParents(deps: WakeupDeps): Promise<void> {
  for (const parentId of await deps.store.readyParents()) {
    if (await deps.store.wakeParent(parentId)) {
      deps.log.info({ sessionId: parentId }, 'every sub-task had ended: the parent session is queued again');
      await deps.queue.enqueue(parentId);
    }
  }
}
