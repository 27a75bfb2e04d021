import { PatchbayError } from '../../core/errors.ts';
import type { SubtaskStore } from '../../core/subtasks.ts';
import type { RunQueue } from '../worker/run-queue.ts';
import type { SessionStore } from '../store/session-store.ts';

/**
 * The sub-task sessions as the harness meets them (SubtaskStore): a spawn writes the children
 * with the parent's step under the parent's run epoch, then asks for every child's run that is
 * still queued (a replay asks again; the queue keeps one per session). A crash between the write
 * and the asks is caught by the worker's sweep of idle queued sessions.
 */
export function createSubtaskSessions(deps: { store: SessionStore; queue: Pick<RunQueue, 'enqueue'> }): SubtaskStore {
  const { store, queue } = deps;
  return {
    async spawn(parentId, spawn) {
      const parent = await store.get(parentId);
      if (!parent) throw new PatchbayError('not_found', `session ${parentId} does not exist`);
      const { children } = await store.spawnChildren(parentId, {
        callId: spawn.callId,
        requester: parent.requester,
        children: spawn.children,
        thread: { source: 'web' },
        step: { events: spawn.events },
        ...(spawn.epoch !== undefined && { fence: { sessionId: parentId, epoch: spawn.epoch, owner: 'this run' } }),
      });
      for (const child of children) if (child.status === 'queued') await queue.enqueue(child.sessionId);
      return children;
    },
    children: (parentId, callId) => store.children(parentId, callId),
  };
}
