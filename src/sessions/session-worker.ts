import type { Logger } from 'pino';
import { runSession, type HarnessDeps } from '../harness/run-session.ts';
import type { EventBus } from './event-bus.ts';
import type { RunQueue } from './run-queue.ts';
import type { SessionStore } from './session-store.ts';

/**
 * Takes runs from the durable queue and drives each through the harness. A stop request reaches
 * the run through the event bus (any process may have handled it) and aborts it.
 */
export async function startSessionWorker(deps: {
  queue: RunQueue;
  bus: EventBus;
  store: SessionStore;
  harness: HarnessDeps;
  log: Logger;
  concurrency?: number;
}): Promise<() => void> {
  const { queue, bus, store, harness, log } = deps;
  await queue.work(
    async ({ sessionId }, jobSignal) => {
      const controller = new AbortController();
      const unsubscribe = bus.subscribe(sessionId, (notice) => {
        if (notice.type !== 'status-changed') return;
        // Caught: an unhandled rejection here (a database blip) would take the whole worker down.
        store.get(sessionId).then(
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

  // A run that crashed or failed to record on every attempt: the session must not stay 'running'
  // with nobody told. Its threads learn why from the status change.
  await queue.workGivenUp(async ({ sessionId, attempts }) => {
    const reason = `the run was given up after ${attempts} attempts (its worker kept crashing or could not reach the database); send a message to try again`;
    log.error({ sessionId, attempts }, 'run given up');
    await store.transition(sessionId, 'fail', {
      reason,
      patch: { error: reason },
      events: [{ event: { type: 'error', code: 'run_given_up', message: reason } }],
    });
  });

  // A session whose run never reached the queue (the process died between writing the session and
  // enqueueing it) is picked up here; the queue keeps a single run per session, so extra asks are free.
  const sweep = async () => {
    for (const sessionId of await store.idleQueued(30)) await queue.enqueue(sessionId);
  };
  const timer = setInterval(() => void sweep().catch((error: unknown) => log.warn({ err: error }, 'queued-session sweep failed')), 60_000);
  timer.unref();
  await sweep();
  return () => clearInterval(timer);
}
