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

/**
 * A slow answer that is never silent for long: each write of the response (one stream event) goes
 * out `everyMs` after the one before, so a client's idle timeout keeps being reset while the whole
 * answer takes (events × everyMs). Stops when the client goes away.
 */
export function trickle(res: ServerResponse, everyMs: number): void {
  const queue: Array<() => void> = [];
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  let timer: NodeJS.Timeout | undefined;
  const pump = () => {
    queue.shift()?.();
    timer = queue.length > 0 ? setTimeout(pump, everyMs) : undefined;
  };
  const later = (send: () => void) => {
    queue.push(send);
    timer ??= setTimeout(pump, everyMs);
    return true;
  };
  res.write = ((chunk: string) => later(() => write(chunk))) as typeof res.write;
  res.end = (() => later(() => end()) && res) as typeof res.end;
  res.on('close', () => {
    clearTimeout(timer);
    queue.length = 0;
  });
}
