import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { SessionEventType, StoredEvent } from '../core/events.ts';
import type { LiveEvent } from '../core/live-events.ts';
import type { EventBus } from '../sessions/event-bus.ts';
import type { SessionStore } from '../sessions/session-store.ts';

const PAGE = 500;
/** The first read is small, so a page watching a long session shows something before the rest is read. */
const FIRST_PAGE = 50;

export type EventStreamOptions = {
  sessionId: string;
  /** The last seq the client has; 0 replays the whole log. */
  afterSeq: number;
  store: Pick<SessionStore, 'events'>;
  bus: Pick<EventBus, 'subscribe' | 'subscribeLive'>;
  log: Logger;
  keepAliveMs: number;
};

const sseHeaders = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // Reverse proxies (nginx) buffer responses unless told not to.
  'x-accel-buffering': 'no',
};

/** Formats one event as a Server-Sent Events frame. */
export function sseFrame(stored: StoredEvent): string {
  return `id: ${stored.seq}\nevent: ${stored.event.type}\ndata: ${JSON.stringify(stored)}\n\n`;
}

/** A transient event: no id, so it never moves the client's resume point. */
export function liveFrame(event: LiveEvent): string {
  return `event: live\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Streams a session's event log to `res` as Server-Sent Events: the backlog after `afterSeq`,
 * then live events. The bus only says "something was written"; every notice triggers a read of
 * the log after the last seq sent, one read at a time, so events arrive in order with no gaps and
 * no duplicates even when notices are lost, repeated or arrive during the backlog read. The
 * subscription is made before the first read so nothing written in between is missed.
 * Returns a function that ends the stream.
 */
export function streamEvents(res: ServerResponse, options: EventStreamOptions): () => void {
  const { sessionId, store, bus, log } = options;
  let lastSeq = options.afterSeq;
  let closed = false;
  let reading = false;
  let again = false;

  const write = async (chunk: string): Promise<void> => {
    if (closed) return;
    if (!res.write(chunk)) await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  };

  const pump = async (): Promise<void> => {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        for (let limit = FIRST_PAGE; ; limit = PAGE) {
          const page = await store.events(sessionId, { afterSeq: lastSeq, limit });
          for (const stored of page) {
            if (closed) return;
            await write(sseFrame(stored));
            lastSeq = stored.seq;
          }
          if (page.length < limit) break;
        }
      } while (again && !closed);
    } catch (error) {
      // A failed read is retried on the next notice or keep-alive; the client keeps its place.
      log.warn({ err: error, sessionId }, 'event stream read failed');
    } finally {
      reading = false;
    }
  };

  const unsubscribe = bus.subscribe(sessionId, () => void pump());
  // Written as they come: each is a whole frame, and a lost one only leaves a gap the stored
  // assistant message fills.
  const unsubscribeLive = bus.subscribeLive(sessionId, (event) => void write(liveFrame(event)));
  // The keep-alive also re-reads the log, which covers notices lost while the bus reconnects.
  const keepAlive = setInterval(() => {
    void write(': keep-alive\n\n');
    void pump();
  }, options.keepAliveMs);
  keepAlive.unref();

  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    unsubscribe();
    unsubscribeLive();
    if (!res.writableEnded) res.end();
  };
  res.on('close', close);

  res.writeHead(200, sseHeaders);
  void write('retry: 3000\n\n').then(pump);
  return close;
}

/**
 * Streams notices of events of `types` in any session (`event: notice`, data `{sessionId, seq,
 * type}`), for pages that list sessions and re-read them when one changes. Notices may be lost
 * while the bus reconnects; listeners re-read on reconnect.
 */
export function streamNotices(
  res: ServerResponse,
  options: { bus: Pick<EventBus, 'subscribe'>; types: readonly SessionEventType[]; keepAliveMs: number },
): () => void {
  const types = new Set<string>(options.types);
  let closed = false;
  const unsubscribe = options.bus.subscribe('*', (notice) => {
    if (!closed && types.has(notice.type)) res.write(`event: notice\ndata: ${JSON.stringify(notice)}\n\n`);
  });
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), options.keepAliveMs);
  keepAlive.unref();
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    unsubscribe();
    if (!res.writableEnded) res.end();
  };
  res.on('close', close);
  res.writeHead(200, sseHeaders);
  res.write('retry: 3000\n\n');
  return close;
}
