import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { SessionEventType, StoredEvent } from '../core/events.ts';
import type { LiveEvent } from '../core/live-events.ts';
import type { EventBus } from '../sessions/notify/event-bus.ts';
import { coalesceOne } from '../core/coalesce.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';

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

/**
 * Formats one stored event as a Server-Sent Events frame: an unnamed (`message`) event whose data
 * carries the type. Not named after the type: a stored `error` event sent as `event: error` fires
 * the browser's EventSource `onerror` on a healthy stream, and the page showed "reconnecting…".
 */
export function sseFrame(stored: StoredEvent): string {
  return `id: ${stored.seq}\ndata: ${JSON.stringify(stored)}\n\n`;
}

/** A transient event: no id, so it never moves the client's resume point. */
export function liveFrame(event: LiveEvent): string {
  return `event: live\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * One Server-Sent Events response: the headers and the reconnect delay, a comment every
 * `keepAliveMs` (so proxies keep the connection; `onKeepAlive` runs beside it), writes that wait
 * for the socket to drain, and one close sequence (stop the keep-alive, run `onClose`, end the
 * response) whether the client leaves or the server ends it.
 */
export function openSse(
  res: ServerResponse,
  options: { keepAliveMs: number; onKeepAlive?: () => void; onClose: () => void },
) {
  let closed = false;
  const write = async (chunk: string): Promise<void> => {
    if (closed) return;
    if (!res.write(chunk))
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
  };
  const keepAlive = setInterval(() => {
    void write(': keep-alive\n\n');
    options.onKeepAlive?.();
  }, options.keepAliveMs);
  keepAlive.unref();
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    options.onClose();
    if (!res.writableEnded) res.end();
  };
  res.on('close', close);
  res.writeHead(200, sseHeaders);
  const opened = write('retry: 3000\n\n');
  return { write, close, opened, isClosed: () => closed };
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

  const read = async (): Promise<void> => {
    try {
      for (let limit = FIRST_PAGE; ; limit = PAGE) {
        const page = await store.events(sessionId, { afterSeq: lastSeq, limit });
        for (const stored of page) {
          if (sse.isClosed()) return;
          await sse.write(sseFrame(stored));
          lastSeq = stored.seq;
        }
        if (page.length < limit) break;
      }
    } catch (error) {
      // A failed read is retried on the next notice or keep-alive; the client keeps its place.
      log.warn({ err: error, sessionId }, 'event stream read failed');
    }
  };
  // One read at a time; a notice during one asks for one more after it.
  const pump = coalesceOne(read, { rerunIf: () => !sse.isClosed() });

  const sse = openSse(res, {
    keepAliveMs: options.keepAliveMs,
    // The keep-alive also re-reads the log, which covers notices lost while the bus reconnects.
    onKeepAlive: () => void pump.run(),
    onClose: () => {
      unsubscribe();
      unsubscribeLive();
    },
  });
  // Subscribed before the first read (below), so nothing written in between is missed.
  const unsubscribe = bus.subscribe(sessionId, () => void pump.run());
  // Written as they come: each is a whole frame, and a lost one only leaves a gap the stored
  // assistant message fills.
  const unsubscribeLive = bus.subscribeLive(sessionId, (event) => void sse.write(liveFrame(event)));
  void sse.opened.then(() => pump.run());
  return sse.close;
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
  const sse = openSse(res, { keepAliveMs: options.keepAliveMs, onClose: () => unsubscribe() });
  const unsubscribe = options.bus.subscribe('*', (notice) => {
    if (types.has(notice.type)) void sse.write(`event: notice\ndata: ${JSON.stringify(notice)}\n\n`);
  });
  return sse.close;
}
