import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import type { CheckOutcome, Verdict } from '../../core/verdict.ts';
import type { CheckRun, CheckStore, StoredVerdict } from '../../harness/checks/check-store.ts';
import { underLease, type RunLease } from '../worker/run-leases.ts';

/**
 * Every check command run (`check_runs`) and every verdict (`verdicts`), history kept. With a
 * lease (one run's store), a check or verdict is recorded only while the lease's epoch is the
 * session's: a run that was taken over cannot record what it saw in a workspace no longer its own.
 */
export function createCheckStore(db: Kysely<Database>, lease?: RunLease): CheckStore {
  const toRun = (r: Awaited<ReturnType<typeof selectRuns>>[number]): CheckRun => ({
    commit: r.commit_sha,
    phase: r.phase as CheckRun['phase'],
    name: r.name,
    command: r.command,
    outcome: r.outcome as CheckOutcome,
    exitCode: r.exit_code,
    durationMs: r.duration_ms,
    logHead: r.log_head,
    logTail: r.log_tail,
    ...(r.reason && { reason: r.reason }),
    startedAt: new Date(r.started_at),
    finishedAt: new Date(r.finished_at),
  });
  const selectRuns = (sessionId: string) =>
    db.selectFrom('check_runs').selectAll().where('session_id', '=', sessionId).orderBy('id').execute();
  return {
    async addRun(sessionId: string, run: CheckRun): Promise<void> {
      const values = {
        session_id: sessionId,
        commit_sha: run.commit,
        phase: run.phase,
        name: run.name,
        command: run.command,
        outcome: run.outcome,
        exit_code: run.exitCode,
        duration_ms: Math.round(run.durationMs),
        log_head: run.logHead,
        log_tail: run.logTail,
        reason: run.reason ?? null,
        started_at: run.startedAt,
        finished_at: run.finishedAt,
      };
      await underLease(db, lease, sessionId, 'a check run', (trx) =>
        trx.insertInto('check_runs').values(values).execute(),
      );
    },
    async runs(sessionId: string, filter: { commit?: string; phase?: CheckRun['phase'] } = {}): Promise<CheckRun[]> {
      return (await selectRuns(sessionId))
        .map(toRun)
        .filter((r) => (!filter.commit || r.commit === filter.commit) && (!filter.phase || r.phase === filter.phase));
    },
    async addVerdict(sessionId: string, v: StoredVerdict): Promise<void> {
      const values = {
        session_id: sessionId,
        commit_sha: v.commit,
        attempt: v.attempt,
        outcome: v.outcome,
        verdict: v.verdict ? JSON.stringify(v.verdict) : null,
        summary: v.summary,
      };
      await underLease(db, lease, sessionId, 'a verdict', (trx) => trx.insertInto('verdicts').values(values).execute());
    },
    async verdicts(sessionId: string): Promise<StoredVerdict[]> {
      const rows = await db
        .selectFrom('verdicts')
        .selectAll()
        .where('session_id', '=', sessionId)
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        commit: r.commit_sha,
        attempt: r.attempt,
        outcome: r.outcome as StoredVerdict['outcome'],
        verdict: (r.verdict as Verdict | null) ?? null,
        summary: r.summary,
      }));
    },
  };
}
