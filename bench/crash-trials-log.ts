/**
 * What the crash trials read in a session's event log: events recorded twice and gaps in `seq`.
 * Shared by crash-trials.ts and the kinds that run their own servers (crash-trials-fan-out.ts).
 */
import type { SessionEvent, StoredEvent } from '../src/core/events.ts';

/** What makes an event one of a kind: its type plus the step it records; undefined when repeats are right. */
function identityOf(event: SessionEvent): string | undefined {
  switch (event.type) {
    case 'tool-start':
    case 'tool-end':
      return event.callId;
    case 'usage':
      // The verifier's usage is its own turn 0: the model tells it from the agent's first turn.
      return `${event.model}#${event.turn}`;
    case 'assistant-message':
      return String(event.turn);
    case 'branch-pushed':
    case 'pr-opened':
      return event.commit;
    case 'status-changed':
      return `${event.from}>${event.to}`;
    case 'verification-finished':
      return `${event.commit}#${event.attempt}`;
    case 'subtasks-spawned':
      return event.callId;
    case 'subtask-ended':
      return event.sessionId;
    case 'run-resumed':
    case 'knowledge-loaded':
    case 'user-message':
      return undefined; // one per interruption, one per run, one per message: not duplicates
    default:
      return '';
  }
}

/** Events of one kind recorded more than once, as `type:identity×n`. */
export function duplicatesIn(log: StoredEvent[]): string[] {
  const seen = new Map<string, number>();
  for (const { event } of log) {
    const identity = identityOf(event);
    if (identity === undefined) continue;
    const key = `${event.type}${identity ? `:${identity}` : ''}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen].filter(([key, n]) => n > 1 && !key.startsWith('status-changed')).map(([key, n]) => `${key}×${n}`);
}

/** Events whose `seq` is not their place in the log (1-based): each one is a gap or a reorder. */
export const seqGaps = (log: StoredEvent[]) => log.filter((e, i) => e.seq !== i + 1).length;
