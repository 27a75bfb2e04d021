import type { Logger } from 'pino';
import type { RunQueue } from './run-queue.ts';
import type { SessionStore } from '../store/session-store.ts';

/**
 * Queues a run for every waiting session whose approval request has expired, so the run records
 * the expiry and hands the model its denial (resumeApproval decides; nothing is decided here).
 * Returns the sessions queued. Safe on every worker at once: a second enqueue changes nothing.
 */
export async function queueExpiredApprovals(
  deps: { store: Pick<SessionStore, 'expiredApprovals' | 'transition'>; queue: Pick<RunQueue, 'enqueue'> },
  now: Date,
): Promise<string[]> {
  const queued: string[] = [];
  for (const id of await deps.store.expiredApprovals(now)) {
    const { applied } = await deps.store.transition(id, 'enqueue', { reason: 'an approval request expired' });
    if (!applied) continue;
    await deps.queue.enqueue(id);
    queued.push(id);
  }
  return queued;
}

/** Every minute, expired approval requests are handed back to their runs. */
export function startApprovalExpiry(
  deps: Parameters<typeof queueExpiredApprovals>[0] & {
    log: Logger;
    shutdown: { add(step: () => Promise<unknown>): void };
  },
): void {
  const { log } = deps;
  const timer = setInterval(() => {
    queueExpiredApprovals(deps, new Date()).then(
      (queued) => queued.length && log.info({ sessions: queued }, 'approval requests expired'),
      (error: unknown) => log.warn({ err: error }, 'approval expiry check failed'),
    );
  }, 60_000);
  timer.unref();
  deps.shutdown.add(async () => clearInterval(timer));
}
