import type { LivePublisher } from '../core/live-events.ts';

export type LiveText = {
  /** Takes one streamed piece of a turn's text. */
  onDelta(text: string, turn: number): void;
  /** Publishes what is buffered now and stops the timer. */
  flush(): void;
};

/**
 * Coalesces a model's token deltas into a few transient events per second, so a fast stream does
 * not become one database notification per token. Each event says where it starts in the turn's
 * text, so a watcher that joined late knows it has only the end of it.
 */
export function createLiveText(sessionId: string, live: LivePublisher, intervalMs = 80): LiveText {
  let turn = -1;
  let sent = 0;
  let pending = '';
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (!pending) return;
    live.publishLive(sessionId, { type: 'assistant-delta', turn, offset: sent, text: pending });
    sent += pending.length;
    pending = '';
  };

  return {
    onDelta(text, deltaTurn) {
      if (deltaTurn !== turn) {
        flush();
        turn = deltaTurn;
        sent = 0;
      }
      pending += text;
      timer ??= setTimeout(flush, intervalMs);
    },
    flush,
  };
}
