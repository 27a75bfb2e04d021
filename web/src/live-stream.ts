/**
 * Server-Sent Events with the page's session cookie (same origin, so EventSource sends it). The
 * browser reconnects by itself and sends Last-Event-ID; the model drops anything it has seen, so a
 * reconnect or a replay never shows an event twice. When the browser gives up (a 401, the server
 * gone), this opens a new stream from the last seq after a pause.
 */
import type { StoredEvent } from '../../src/core/events.ts';
import type { LiveEvent } from '../../src/core/live-events.ts';

export type StreamHandlers = {
  onEvent(stored: StoredEvent): void;
  onLive(event: LiveEvent): void;
  onState(state: 'open' | 'reconnecting'): void;
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
    source.onmessage = (message: MessageEvent<string>) => handlers.onEvent(JSON.parse(message.data) as StoredEvent);
    source.onerror = () => {
      handlers.onState('reconnecting');
      if (source?.readyState === EventSource.CLOSED && !closed) {
        source = undefined;
        retry = window.setTimeout(connect, 3000);
      }
    };
    source.addEventListener('live', (message) =>
      handlers.onLive(JSON.parse((message as MessageEvent<string>).data) as LiveEvent),
    );
  };
  connect();
  return () => {
    closed = true;
    if (retry !== undefined) clearTimeout(retry);
    source?.close();
  };
}

/** Notices of changes to any session, for the list. */
export function openListStream(onChange: () => void): () => void {
  const source = new EventSource('/api/sessions-stream');
  source.addEventListener('notice', () => onChange());
  // After a reconnect some notices may have been missed: read the list again.
  source.onopen = () => onChange();
  return () => source.close();
}
