import pg from 'pg';
import type { Logger } from 'pino';
import type { LiveEvent, LivePublisher } from '../core/live-events.ts';
import { throttleLog } from '../core/log-throttle.ts';
import { type EventNotice, liveEventsChannel, parseNotice, sessionEventsChannel } from './notify-channels.ts';

export type { EventNotice };
export type EventListener = (notice: EventNotice) => void;
export type LiveListener = (event: LiveEvent) => void;

export interface EventBus extends LivePublisher {
  /** Listens to one session's notices, or every session's with '*'. Returns an unsubscribe function. */
  subscribe(sessionId: string | '*', listener: EventListener): () => void;
  /** Listens to one session's transient events (streaming text). Returns an unsubscribe function. */
  subscribeLive(sessionId: string, listener: LiveListener): () => void;
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
  const liveListeners = new Map<string, Set<LiveListener>>();
  let client: pg.Client | undefined;
  let closed = false;
  const lost = throttleLog((fields, message) => log.warn(fields, message));

  const dispatchLive = (payload: string | undefined) => {
    const notice = parseNotice(liveEventsChannel, payload);
    if (!notice) return;
    for (const listener of liveListeners.get(notice.sessionId) ?? []) {
      try {
        listener(notice.event);
      } catch (error) {
        log.error({ err: error }, 'live listener failed');
      }
    }
  };

  const dispatch = (payload: string | undefined) => {
    const notice = parseNotice(sessionEventsChannel, payload);
    if (!notice) return;
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
    next.on('notification', (message) =>
      message.channel === liveEventsChannel.name ? dispatchLive(message.payload) : dispatch(message.payload),
    );
    next.on('error', drop);
    try {
      await next.connect();
      await next.query(`listen ${sessionEventsChannel.name}`);
      await next.query(`listen ${liveEventsChannel.name}`);
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
    subscribe: (sessionId, listener) => addListener(listeners, sessionId, listener),
    subscribeLive: (sessionId, listener) => addListener(liveListeners, sessionId, listener),
    // Through the database, so watchers connected to any process see it; our own LISTEN brings it
    // back to this process's listeners too. Dropped while disconnected: it is transient.
    publishLive(sessionId, event) {
      for (const chunk of liveChunks(event)) {
        client
          ?.query('select pg_notify($1, $2)', [liveEventsChannel.name, JSON.stringify({ sessionId, event: chunk })])
          .catch((error: unknown) => {
            log.debug({ err: error, sessionId }, 'live event not published');
          });
      }
    },
    async close() {
      closed = true;
      listeners.clear();
      liveListeners.clear();
      await client?.end().catch(() => undefined);
    },
  };
}

function addListener<L>(map: Map<string, Set<L>>, key: string, listener: L): () => void {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0) map.delete(key);
  };
}

/** NOTIFY payloads stop at 8000 bytes: 1000 characters stay below that even when every one is escaped. */
const LIVE_CHUNK_CHARS = 1000;

function liveChunks(event: LiveEvent): LiveEvent[] {
  if (event.text.length <= LIVE_CHUNK_CHARS) return [event];
  const chunks: LiveEvent[] = [];
  for (let at = 0; at < event.text.length; at += LIVE_CHUNK_CHARS) {
    chunks.push({ ...event, offset: event.offset + at, text: event.text.slice(at, at + LIVE_CHUNK_CHARS) });
  }
  return chunks;
}
