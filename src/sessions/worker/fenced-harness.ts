import type { Logger } from 'pino';
import type { Db } from '../../../db/database.ts';
import type { KnowledgeStore } from '../../harness/knowledge/knowledge-store.ts';
import type { HarnessDeps } from '../../harness/run-session.ts';
import { createCheckStore } from '../harness-stores/pg-check-store.ts';
import { createCheckpointStore } from '../harness-stores/pg-checkpoint-store.ts';
import type { SessionStore } from '../store/session-store.ts';
import { isPatchbayError } from '../../core/errors.ts';
import type { RunLog } from '../../core/run-log.ts';
import { leaseLost, type RunLease } from './run-leases.ts';

/**
 * The harness's dependencies for one run under its lease: every write of the run lands only while
 * the lease's epoch is the session's. The run log (events, transcript, transitions), checkpoints,
 * check runs and verdicts are checked in the write's own transaction; the sandbox is acquired and
 * recorded under the epoch (`runEpoch`); pushes and pull-request updates are checked just before
 * they go out (RunLog.assertCurrent in the harness), and so are the lessons and extractions the run
 * stores in the repository's knowledge.
 */
export function fencedHarness(
  harness: HarnessDeps,
  lease: RunLease,
  deps: { store: SessionStore; db: Db; log: Logger },
): HarnessDeps {
  const { store, db, log } = deps;
  const runLog = fencedRunLog(store, lease, log);
  const current = () => runLog.assertCurrent!(lease.sessionId);
  return {
    ...harness,
    store: runLog,
    runEpoch: lease.epoch,
    ...(harness.checkpoints && {
      checkpoints: { ...harness.checkpoints, store: createCheckpointStore(db, lease) },
    }),
    ...(harness.gates && {
      gates: {
        ...harness.gates,
        checks: createCheckStore(db, lease),
        knowledge: fencedKnowledge(harness.gates.knowledge, current),
      },
    }),
  };
}

/** The knowledge store as one run writes to it: its writes first check that the run still holds its lease. */
function fencedKnowledge(knowledge: KnowledgeStore, current: () => Promise<void>): KnowledgeStore {
  return {
    get: (repo) => knowledge.get(repo),
    list: () => knowledge.list(),
    saveExtracted: async (repo, builtFrom, document) => {
      await current();
      return knowledge.saveExtracted(repo, builtFrom, document);
    },
    saveEdit: (repo, document, by) => knowledge.saveEdit(repo, document, by),
    // A person's decision, not the run's: it needs no lease.
    changeEgressAllow: (repo, change) => knowledge.changeEgressAllow(repo, change),
    addLesson: async (repo, text) => {
      await current();
      return knowledge.addLesson(repo, text);
    },
  };
}

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
