/** How long one attempt of a model call may take: silent (between stream chunks, or before the first), and in all. */
export type CallTimeouts = { idleMs: number; totalMs: number };

/**
 * Generous, because a large prompt on a local server can take minutes before its first token and
 * a reasoning model may think silently; a server that is truly hung is still noticed in minutes.
 */
export const defaultCallTimeouts: CallTimeouts = { idleMs: 5 * 60_000, totalMs: 20 * 60_000 };

export type CallTimer = {
  /** The caller's signal, also aborted when a timeout fires: hand this to the SDK. */
  signal: AbortSignal;
  /** A chunk arrived: the idle timeout starts again. */
  alive(): void;
  /** Which timeout fired, if one did. */
  expired(): 'idle' | 'total' | undefined;
  stop(): void;
};

/** Starts both timeouts of one attempt; `stop` clears them (call it however the attempt ends). */
export function startCallTimer(parent: AbortSignal, timeouts: CallTimeouts): CallTimer {
  const controller = new AbortController();
  let fired: 'idle' | 'total' | undefined;
  const fire = (which: 'idle' | 'total') => () => {
    fired ??= which;
    controller.abort(new Error(`model call ${which} timeout`));
  };
  const total = setTimeout(fire('total'), timeouts.totalMs);
  let idle = setTimeout(fire('idle'), timeouts.idleMs);
  return {
    signal: AbortSignal.any([parent, controller.signal]),
    alive() {
      clearTimeout(idle);
      idle = setTimeout(fire('idle'), timeouts.idleMs);
    },
    expired: () => fired,
    stop() {
      clearTimeout(total);
      clearTimeout(idle);
    },
  };
}
