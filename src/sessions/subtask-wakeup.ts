import type { Logger } from 'pino';
import type { RunQueue } from './run-queue.ts';
import type { SessionStore } from './session-store.ts';

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
