import type { EventOf } from './events.ts';

/** What a thread is told when its session has to wait for a worker, and when it starts. */
export function queueNotice(event: EventOf<'queue-waiting'> | EventOf<'queue-started'>): string {
  if (event.type === 'queue-started') return `Starting now, after waiting ${formatWait(event.waitedMs)} in the queue.`;
  const ahead =
    event.ahead === 0 ? 'you are next' : `${event.ahead} session${event.ahead === 1 ? '' : 's'} ahead of you`;
  const busy =
    event.limit !== undefined ? ` (${event.running} of at most ${event.limit} running)` : ` (${event.running} running)`;
  return `Queued: ${ahead}${busy}. I will start as soon as a worker is free.`;
}

function formatWait(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}
