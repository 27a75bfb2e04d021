/**
 * Server-Sent Events with the page's session cookie (same origin, so EventSource sends it). The
 * browser reconnects by itself and sends Last-Event-ID; the model drops anything it has seen, so a
 * reconnect or a replay never shows an event twice. When the browser gives up (a 401, the server
 * gone), this opens a new stream from the last seq after a pause.
 */
import { z } from 'zod';
import { StoredEvent } from '../../src/core/events.ts';
import { LiveEvent } from '../../src/core/live-events.ts';

export type StreamHandlers = {
  onEvent(stored: StoredEvent): void;
  onLive(event: LiveEvent): void;
  onState(state: 'open' | 'reconnecting'): void;
  /** A frame that is not an event this page knows: it is shown as an error and skipped. */
  onInvalid(message: string): void;
  /** The seq to resume after when the stream has to be opened again. */
  lastSeq(): number;
};

export function openSessionStream(sessionId: string, handlers: StreamHandlers): () => void {
  let source: EventSource | undefined;
  let retry: number | undefined;
  let closed = false;

  const connect = () => {
    const after = handlers.lastSeq();
    source = new EventSource(`/api/sessions/${encodeURIComponent(sessionId)}/events${after ? `?after=${after}` : ''}`);
    source.onopen = () => handlers.onState('open');
    // Stored events are unnamed frames (their type is in the data); transient text is `live`.
    source.onmessage = (message: MessageEvent<string>) => {
      const stored = parseFrame(StoredEvent, message.data);
      if (stored.success) handlers.onEvent(stored.data);
      else handlers.onInvalid(invalidFrame('an event', stored.error));
    };
    source.onerror = () => {
      handlers.onState('reconnecting');
      if (source?.readyState === EventSource.CLOSED && !closed) {
        source = undefined;
        retry = window.setTimeout(connect, 3000);
      }
    };
    source.addEventListener('live', (message) => {
      const live = parseFrame(LiveEvent, (message as MessageEvent<string>).data);
      if (live.success) handlers.onLive(live.data);
      else handlers.onInvalid(invalidFrame('a live event', live.error));
    });
  };
  connect();
  return () => {
    closed = true;
    if (retry !== undefined) clearTimeout(retry);
    source?.close();
  };
}

/** A frame's JSON parsed with `schema`; text that is not JSON fails like JSON that does not match. */
function parseFrame<T>(schema: z.ZodType<T>, data: string) {
  try {
    return schema.safeParse(JSON.parse(data));
  } catch {
    return schema.safeParse(undefined);
  }
}

function invalidFrame(what: string, error: z.ZodError): string {
  const first = error.issues[0];
  return `The event stream sent ${what} this page does not know${first ? ` (${first.path.join('.') || 'frame'}: ${first.message})` : ''}; reload the page, or check that the page and the server are the same version.`;
}

/** Notices of changes to any session, for the list. */
export function openListStream(onChange: () => void): () => void {
  return openNoticeStream(() => onChange());
}

/** The part of a notice the page reads: which session changed. */
const Notice = z.object({ sessionId: z.string() });

/**
 * Notices of changes to any session, with the session each is about; `undefined` after a
 * (re)connect, when some may have been missed and whatever the caller shows should be read again.
 */
export function openNoticeStream(onNotice: (sessionId: string | undefined) => void): () => void {
  const source = new EventSource('/api/sessions-stream');
  source.addEventListener('notice', (message) => {
    const notice = parseFrame(Notice, (message as MessageEvent<string>).data);
    onNotice(notice.success ? notice.data.sessionId : undefined);
  });
  source.onopen = () => onNotice(undefined);
  return () => source.close();
}
