import type { Logger } from 'pino';
import { isPatchbayError } from '../core/errors.ts';
import type { RunLog } from '../core/run-log.ts';
import { leaseLost, type RunLease } from './run-leases.ts';
import type { SessionStore } from './session-store.ts';

/**
 * The run log of one run under its lease: every write (step, compaction, transition) is refused
 * with `lease_lost` once another run took the session over, and the refusal is logged. Reads go
 * straight to the store.
 */
export function fencedRunLog(store: SessionStore, lease: RunLease, log: Logger): RunLog {
  let told = false;
  const refused = <T>(write: Promise<T>): Promise<T> =>
    write.catch((error: unknown) => {
      if (isPatchbayError(error, 'lease_lost') && !told) {
        told = true;
        log.warn(
          { sessionId: lease.sessionId, epoch: lease.epoch, reason: error.message },
          'a write of this run was refused: it was taken over by another run; the run stops here',
        );
      }
      throw error;
    });
  return {
    get: (sessionId) => store.get(sessionId),
    transcript: (sessionId) => store.transcript(sessionId),
    events: (sessionId, options) => store.events(sessionId, options),
    commitStep: (sessionId, step) => refused(store.commitStep(sessionId, step, lease)),
    replaceTranscript: (sessionId, messages, events, usage) =>
      refused(store.replaceTranscript(sessionId, messages, events, usage, lease)),
    transition: (sessionId, trigger, options) =>
      refused(store.transition(sessionId, trigger, { ...options, fence: lease })),
    assertCurrent: (sessionId) =>
      refused(
        store.runEpoch(sessionId).then((epoch) => {
          if (epoch !== lease.epoch) throw leaseLost(lease, epoch, 'an effect outside the database');
        }),
      ),
  };
}
