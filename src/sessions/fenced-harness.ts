import type { Logger } from 'pino';
import type { Db } from '../../db/database.ts';
import type { KnowledgeStore } from '../harness/knowledge/knowledge-store.ts';
import type { HarnessDeps } from '../harness/run-session.ts';
import { createCheckStore } from './pg-check-store.ts';
import { createCheckpointStore } from './pg-checkpoint-store.ts';
import { fencedRunLog } from './fenced-run-log.ts';
import type { RunLease } from './run-leases.ts';
import type { SessionStore } from './session-store.ts';

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
    // The repository's, not the run's: a background refresh may end after the run lost its lease.
    saveScouted: (repo, report) => knowledge.saveScouted(repo, report),
    addLesson: async (repo, text) => {
      await current();
      return knowledge.addLesson(repo, text);
    },
  };
}
