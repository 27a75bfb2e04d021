import type { StoredEvent } from '../core/events.ts';
import type { SessionStatus } from '../core/session-status.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';

/** What metrics and traces are told about the event log this process writes. Must not throw. */
export type StoreObserver = {
  /** Events this process appended (append and commitStep), after their transaction committed. */
  onEvents(events: readonly StoredEvent[]): void;
  /** A status change this process made. */
  onStatus(sessionId: string, from: SessionStatus, to: SessionStatus): void;
};

/**
 * The session store, telling `observers` what this process writes: the composition root's one
 * place where the event log meets metrics and traces, so the layers below know of neither.
 * Counted after each write resolves (its transaction committed); a failed write counts nothing.
 */
export function observeStore(store: SessionStore, observers: readonly StoreObserver[]): SessionStore {
  if (observers.length === 0) return store;
  const tell = (events: readonly StoredEvent[]) => {
    if (events.length > 0) for (const o of observers) o.onEvents(events);
  };
  return {
    ...store,
    async append(sessionId, events, delivery) {
      const stored = await store.append(sessionId, events, delivery);
      tell(stored);
      return stored;
    },
    // Every argument goes through: a run's lease (`fence`) is what makes its step conditional.
    async commitStep(sessionId, step, fence) {
      const stored = await store.commitStep(sessionId, step, fence);
      tell(stored);
      return stored;
    },
    async transition(sessionId, trigger, options) {
      const result = await store.transition(sessionId, trigger, options);
      // A transition's own events (an error, a question) are not told: none of them is counted.
      if (result.applied && result.from !== result.session.status)
        for (const o of observers) o.onStatus(sessionId, result.from, result.session.status);
      return result;
    },
  };
}
