import type { Logger } from 'pino';
import type { EventOf } from '../../core/events.ts';
import type { SessionStore } from '../store/session-store.ts';

/**
 * The line of queued sessions, in the order they were queued (`sessions.queued_at`, migration 013),
 * which is the order the queue hands their runs out. A session that has to wait is told once per
 * wait where it stands, and told again when a worker takes it.
 */
export function createWaitingLine(deps: { store: SessionStore; log: Logger; limit?: number }) {
  const { store, log } = deps;
  return {
    /** Tells a queued session where it stands, once per wait. */
    async tell(sessionId: string): Promise<void> {
      const place = await store.queueStanding(sessionId);
      if (!place) return;
      const since = place.since.toISOString();
      await store.append(sessionId, [
        {
          event: {
            type: 'queue-waiting',
            ahead: place.ahead,
            running: place.running,
            ...(deps.limit !== undefined && { limit: deps.limit }),
            since,
          },
          dedupeKey: `queue-waiting:${since}`,
        },
      ]);
    },

    /** Tells a session that was told it waits that a worker has taken it (before its run starts). */
    async started(sessionId: string): Promise<void> {
      const place = await store.queueStanding(sessionId);
      if (!place) return;
      const since = place.since.toISOString();
      const told = await store.events(sessionId, { types: ['queue-waiting'] });
      if (!told.some((e) => (e.event as EventOf<'queue-waiting'>).since === since)) return;
      await store.append(sessionId, [
        {
          event: { type: 'queue-started', waitedMs: Math.max(0, Date.now() - place.since.getTime()), since },
          dedupeKey: `queue-started:${since}`,
        },
      ]);
    },

    /** Tells every session queued for longer than `seconds` (no worker has taken it) where it stands. */
    async tellWaiting(seconds: number): Promise<void> {
      const untold = await store.untoldWaiting(seconds);
      for (const id of untold) {
        await this.tell(id).catch((error: unknown) =>
          log.warn({ err: error, sessionId: id }, 'could not tell a queued session where it stands'),
        );
      }
    },
  };
}
