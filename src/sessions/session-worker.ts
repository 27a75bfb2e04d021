import type { Logger } from 'pino';
import { runSession, type HarnessDeps } from '../harness/run-session.ts';
import type { EventBus } from './event-bus.ts';
import type { RunQueue } from './run-queue.ts';

/**
 * Takes runs from the durable queue and drives each through the harness. A stop request reaches
 * the run through the event bus (any process may have handled it) and aborts it.
 */
export async function startSessionWorker(deps: {
  queue: RunQueue;
  bus: EventBus;
  harness: HarnessDeps;
  log: Logger;
  concurrency?: number;
}): Promise<void> {
  const { queue, bus, harness, log } = deps;
  await queue.work(
    async ({ sessionId }, jobSignal) => {
      const controller = new AbortController();
      const unsubscribe = bus.subscribe(sessionId, (notice) => {
        if (notice.type !== 'status-changed') return;
        // Caught: an unhandled rejection here (a database blip) would take the whole worker down.
        harness.store.get(sessionId).then(
          (session) => {
            if (session?.status === 'cancelled') controller.abort(new Error('stopped'));
          },
          (error: unknown) => log.warn({ err: error, sessionId }, 'could not check for a stop; the run checks again before its next turn'),
        );
      });
      const signal = jobSignal ? AbortSignal.any([controller.signal, jobSignal]) : controller.signal;
      try {
        await runSession(sessionId, harness, signal);
      } catch (error) {
        log.error({ err: error, sessionId }, 'run could not be recorded; the queue will retry it');
        throw error;
      } finally {
        unsubscribe();
      }
    },
    { concurrency: deps.concurrency ?? 2 },
  );
}
