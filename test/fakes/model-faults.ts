import type { ServerResponse } from 'node:http';

/**
 * Faults a model API fake answers with before any byte of its answer, as the services and the
 * networks in front of them really behave: `drop` closes the connection after the request was
 * read (a proxy or load balancer resetting it), `hang` accepts the request and never answers
 * (until the client gives up; the fake's close ends it).
 */
export type ConnectionFault = { kind: 'drop' } | { kind: 'hang' };

/** Carries out a connection fault; the response is never written. */
export function applyConnectionFault(res: ServerResponse, fault: ConnectionFault): void {
  if (fault.kind === 'drop') res.socket?.destroy();
  // 'hang': nothing is written; the socket stays open until the client aborts or the fake closes.
}

/**
 * Faults in the middle of a streamed answer, after its first content delta: `cut` ends the
 * response cleanly without the closing event (what a proxy's idle timeout or a restarted server
 * leaves), `drop` resets the connection, `stall` keeps it open and sends nothing more.
 */
export type StreamFault = 'cut' | 'drop' | 'stall';

/** Ends the answer as the fault says; true when the stream must stop here. */
export function applyStreamFault(res: ServerResponse, fault: StreamFault | undefined): boolean {
  if (!fault) return false;
  if (fault === 'cut') res.end();
  else if (fault === 'drop') res.socket?.destroy();
  return true;
}
