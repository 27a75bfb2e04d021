import { z } from 'zod';

export const SessionStatus = z.enum(['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled']);
export type SessionStatus = z.infer<typeof SessionStatus>;

/** What happens to a session; the status follows from it. */
export type SessionTrigger =
  | 'enqueue' // new work for the session: a start, a follow-up, an answer, a crashed run picked up again
  | 'start' // a worker begins a run
  | 'ask' // the agent asked a question and waits for an answer
  | 'finish' // the run ended with a result
  | 'fail' // the run ended with an error
  | 'cancel'; // someone asked it to stop

const table: Record<SessionStatus, Partial<Record<SessionTrigger, SessionStatus>>> = {
  queued: { enqueue: 'queued', start: 'running', cancel: 'cancelled', fail: 'failed' },
  running: {
    enqueue: 'running',
    start: 'running',
    ask: 'waiting',
    finish: 'completed',
    fail: 'failed',
    cancel: 'cancelled',
  },
  waiting: { enqueue: 'queued', cancel: 'cancelled', fail: 'failed' },
  completed: { enqueue: 'queued' },
  failed: { enqueue: 'queued' },
  cancelled: { enqueue: 'queued' },
};

/**
 * The status after `trigger`, or undefined when the trigger does not apply (for example a stop on
 * a completed session). Enqueueing a running session keeps it running: the new message is picked up
 * by the live run before its next model turn.
 */
export function nextStatus(status: SessionStatus, trigger: SessionTrigger): SessionStatus | undefined {
  return table[status][trigger];
}

export function isTerminal(status: SessionStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

export function isActive(status: SessionStatus): boolean {
  return status === 'queued' || status === 'running';
}
