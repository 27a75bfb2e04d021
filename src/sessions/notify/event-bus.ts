import pg from 'pg';
import type { Logger } from 'pino';
import { type LiveEvent, LiveNotice, type LivePublisher } from '../../core/live-events.ts';
import { throttleLog } from '../../core/log-throttle.ts';
import { defineChannel, EventNotice, type NotifyChannel, parseNotice } from './notify-channels.ts';

export type { EventNotice };
/**
 * Hears of every event written: a function, or an object whose `onNotice` is called (the thread
 * notifier is one, so go-to-definition leads from `tellListeners` to the notifier's `onNotice`).
 */
export type EventListener = ((notice: EventNotice) => void) | NoticeListener;
export interface NoticeListener {
  onNotice(notice: EventNotice): void;
}
export type LiveListener = (event: LiveEvent) => void;

/** The listeners of one process's bus, by session id ('*' for every session's notices). */
type Listeners = {
  events: Map<string, Set<EventListener>>;
  live: Map<string, Set<LiveListener>>;
  log: Logger;
};

/** Sent by the session store in the transaction that appends an event (delivered at commit); handled by `tellListeners`. */
export const sessionEventsChannel = defineChannel('patchbay_events', EventNotice, tellListeners);

/** Transient events (streaming text), published by any process and never stored; handled by `tellLiveListeners`. */
export const liveEventsChannel = defineChannel('patchbay_live', LiveNotice, tellLiveListeners);

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
  const listeners: Listeners = { events: new Map(), live: new Map(), log };
  let client: pg.Client | undefined;
  let closed = false;
  const lost = throttleLog((fields, message) => log.warn(fields, message));

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
      message.channel === liveEventsChannel.name
        ? takeNotice(listeners, liveEventsChannel, message.payload)
        : takeNotice(listeners, sessionEventsChannel, message.payload),
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
    subscribe: (sessionId, listener) => addListener(listeners.events, sessionId, listener),
    subscribeLive: (sessionId, listener) => addListener(listeners.live, sessionId, listener),
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
      listeners.events.clear();
      listeners.live.clear();
      await client?.end().catch(() => undefined);
    },
  };
}

/** A notice this process LISTENs to, parsed with its channel's schema and handed to the channel's handler. */
function takeNotice<T>(
  listeners: Listeners,
  channel: NotifyChannel<T, (listeners: Listeners, notice: T) => void>,
  payload: string | undefined,
): void {
  const notice = parseNotice(channel, payload);
  if (notice) channel.handler(listeners, notice);
}

/** An event was written: every listener of its session and of every session ('*') hears of it. */
function tellListeners(listeners: Listeners, notice: EventNotice): void {
  for (const key of [notice.sessionId, '*']) {
    for (const listener of listeners.events.get(key) ?? []) {
      try {
        if (typeof listener === 'function') listener(notice);
        else listener.onNotice(notice);
      } catch (error) {
        listeners.log.error({ err: error }, 'event listener failed');
      }
    }
  }
}

/** Streamed text: every live listener of its session gets it. */
function tellLiveListeners(listeners: Listeners, notice: LiveNotice): void {
  for (const listener of listeners.live.get(notice.sessionId) ?? []) {
    try {
      listener(notice.event);
    } catch (error) {
      listeners.log.error({ err: error }, 'live listener failed');
    }
  }
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
