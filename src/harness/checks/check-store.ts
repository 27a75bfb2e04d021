import type { CheckOutcome, Verdict } from '../../core/verdict.ts';

export type CheckRun = {
  commit: string;
  phase: 'setup' | 'check';
  name: string;
  command: string;
  outcome: CheckOutcome;
  exitCode: number | null;
  durationMs: number;
  logHead: string;
  logTail: string;
  reason?: string | undefined;
  startedAt: Date;
  finishedAt: Date;
};

export type StoredVerdict = {
  commit: string;
  attempt: number;
  outcome: 'passed' | 'failed' | 'not-run';
  verdict: Verdict | null;
  summary: string;
};

/** Every check command run (`check_runs`) and every verdict (`verdicts`); the sessions layer implements it. */
export interface CheckStore {
  addRun(sessionId: string, run: CheckRun): Promise<void>;
  runs(sessionId: string, filter?: { commit?: string; phase?: CheckRun['phase'] }): Promise<CheckRun[]>;
  addVerdict(sessionId: string, verdict: StoredVerdict): Promise<void>;
  verdicts(sessionId: string): Promise<StoredVerdict[]>;
}
