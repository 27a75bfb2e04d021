import pg from 'pg';
import type { Logger } from 'pino';
import { throttleLog } from '../core/log-throttle.ts';
import { EVENTS_CHANNEL } from './session-store.ts';

/** A note that an event was written. Readers fetch the event itself from the log. */
export type EventNotice = { sessionId: string; seq: number; type: string };
export type EventListener = (notice: EventNotice) => void;

export interface EventBus {
  /** Listens to one session's notices, or every session's with '*'. Returns an unsubscribe function. */
  subscribe(sessionId: string | '*', listener: EventListener): () => void;
  close(): Promise<void>;
}

/**
 * Fans out the store's NOTIFYs to listeners in this process, so that every API and worker process
 * sharing the database sees every event. Notices can be lost while reconnecting; readers always
 * re-read the log from their last seq, so a lost notice delays an update but never drops one.
 */
export async function createEventBus(options: { url: string; log: Logger; reconnectMs?: number }): Promise<EventBus> {
  const { log } = options;
  const listeners = new Map<string, Set<EventListener>>();
  let client: pg.Client | undefined;
  let closed = false;
  const lost = throttleLog((fields, message) => log.warn(fields, message));

  const dispatch = (payload: string | undefined) => {
    const match = /^(.+):(\d+):([a-z-]+)$/.exec(payload ?? '');
    if (!match) return;
    const notice: EventNotice = { sessionId: match[1]!, seq: Number(match[2]), type: match[3]! };
    for (const key of [notice.sessionId, '*']) {
      for (const listener of listeners.get(key) ?? []) {
        try {
          listener(notice);
        } catch (error) {
          log.error({ err: error }, 'event listener failed');
        }
      }
    }
  };

  const reconnect = () => {
    if (!closed) setTimeout(() => void connect(true).catch(() => undefined), options.reconnectMs ?? 1000).unref();
  };

  /** With `retry`, a failure (to connect now, or of the connection later) schedules another attempt. */
  const connect = async (retry: boolean): Promise<void> => {
    const next = new pg.Client({ connectionString: options.url });
    let dropped = false;
    const drop = (error: unknown) => {
      if (dropped) return;
      dropped = true;
      if (retry) lost({ err: error }, 'event bus connection lost; reconnecting');
      next.end().catch(() => undefined);
      if (client === next) client = undefined;
      // Every failed attempt schedules the next: one refused reconnect must not end the bus for good.
      if (retry) reconnect();
    };
    next.on('notification', (message) => dispatch(message.payload));
    next.on('error', drop);
    try {
      await next.connect();
      await next.query(`listen ${EVENTS_CHANNEL}`);
    } catch (error) {
      drop(error);
      throw error;
    }
    if (closed) {
      await next.end().catch(() => undefined);
      return;
    }
    client = next;
    retry = true;
  };
  await connect(false);

  return {
    subscribe(sessionId, listener) {
      let set = listeners.get(sessionId);
      if (!set) listeners.set(sessionId, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0) listeners.delete(sessionId);
      };
    },
    async close() {
      closed = true;
      listeners.clear();
      await client?.end().catch(() => undefined);
    },
  };
}
