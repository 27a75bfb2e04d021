import type { StoredEvent } from './events.ts';
import type { SessionRecord } from './session-record.ts';
import type { SubtaskLine } from './subtasks.ts';
import type { ThreadRef, ThreadSource } from './thread-ref.ts';

export type ThreadUpdate = {
  session: SessionRecord;
  thread: ThreadRef;
  /** New events for this thread, in order, since the last successful reply. */
  events: StoredEvent[];
  /** What this replier returned for the thread last time (undefined the first time). */
  state: unknown;
  /** The session's sub-tasks (its child sessions) as they stand now, in order; empty when it has none. */
  children: readonly SubtaskLine[];
  signal: AbortSignal;
};

/**
 * The outbound half of an integration: it shows a session's progress in a thread of its own source.
 * Called with events in order; must be idempotent for a batch it has partly posted before (a crash
 * between posting and recording repeats the batch). Throwing leaves the thread's cursor where it
 * was and the batch is retried with backoff.
 */
export interface ThreadReplier {
  readonly source: ThreadSource;
  /** Optional: the longest its `refresh` may wait between calls (a minute when none says less). */
  readonly refreshEveryMs?: number;
  reply(update: ThreadUpdate): Promise<{ state: unknown }>;
  /**
   * Optional: called about once a minute for threads of running sessions that have had every event
   * replied to, so live details that change without events (elapsed time) stay current, and
   * whenever one of the session's children changed (its sub-tasks are written in the children's
   * logs, not the parent's). Same locking and state as reply; it must not post new messages.
   */
  refresh?(update: Omit<ThreadUpdate, 'events'>): Promise<{ state: unknown }>;
}
