import type { StoredEvent } from '../core/events.ts';
import type { EventBus } from '../sessions/notify/event-bus.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';

/**
 * Calls `onEvent` for every event of the session in order, from the start, until `until` returns
 * true or the signal aborts. Reads the log on every bus notice and once a second as a backstop.
 */
export async function followSession(options: {
  sessionId: string;
  store: SessionStore;
  bus: EventBus;
  onEvent: (event: StoredEvent) => Promise<void> | void;
  until: (event: StoredEvent) => boolean;
  signal?: AbortSignal;
}): Promise<void> {
  const { sessionId, store } = options;
  let lastSeq = 0;
  let wake: () => void = () => {};
  const unsubscribe = options.bus.subscribe(sessionId, () => wake());
  try {
    for (;;) {
      const events = await store.events(sessionId, { afterSeq: lastSeq });
      for (const event of events) {
        lastSeq = event.seq;
        await options.onEvent(event);
        if (options.until(event)) return;
      }
      if (options.signal?.aborted) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    unsubscribe();
  }
}
