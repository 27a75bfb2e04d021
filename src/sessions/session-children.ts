import type { Db } from '../../db/database.ts';
import type { Actor } from '../core/actor.ts';
import type { StoredEvent } from '../core/events.ts';
import type { Step } from '../core/run-log.ts';
import { SessionResult } from '../core/session-record.ts';
import { SessionStatus } from '../core/session-status.ts';
import type { SubtaskLine } from '../core/subtasks.ts';
import type { ThreadRef } from '../core/thread-ref.ts';
import { appendEvents } from './event-log.ts';
import type { RunLease } from './run-leases.ts';
import type { Trx } from './session-lock.ts';
import { insertFirstThread } from './session-threads.ts';
import { writeStep } from './transcript-store.ts';

/** One child session as a spawn_subtasks call asks for it. */
export type NewChild = {
  /** The id it gets when it is created now; a replayed call finds the child made before instead. */
  id: string;
  /** 1-based, in the order the agent listed the tasks. */
  index: number;
  title: string;
  repo: string;
  prompt: string;
  branch: string;
  baseBranch?: string | undefined;
  /** The thread it is bound to (its own page: the parent's threads stay the parent's). */
  thread: ThreadRef;
};

/** A spawn_subtasks call's children and the parent's step that records them, written together. */
export type ChildSpawn = {
  /** The spawning tool call: with the index, what makes a child unique. */
  callId: string;
  requester: Actor;
  children: NewChild[];
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
  await insertFirstThread(trx, child.id, child.thread);
  const actor = spawn.requester;
  await appendEvents(trx, child.id, [
    { event: { type: 'session-created', repo: child.repo, prompt: child.prompt, actor, thread: child.thread } },
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
