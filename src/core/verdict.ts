import { z } from 'zod';

/**
 * The independent verifier's judgement of one commit, as its forced `record_verdict` tool returns
 * it: four criteria scored 0 (no), 1 (partly) or 2 (yes), each with its reason, and a summary.
 */
export const VerdictScore = z.object({
  score: z.union([z.literal(0), z.literal(1), z.literal(2)]),
  reason: z.string(),
});
export type VerdictScore = z.infer<typeof VerdictScore>;

export const verdictCriteria = ['relevance', 'completeness', 'correctness', 'scope'] as const;
export type VerdictCriterion = (typeof verdictCriteria)[number];

export const Verdict = z.object({
  relevance: VerdictScore,
  completeness: VerdictScore,
  correctness: VerdictScore,
  scope: VerdictScore,
  summary: z.string(),
});
export type Verdict = z.infer<typeof Verdict>;

/** Sum of the four scores (0..8). */
export function verdictTotal(verdict: Verdict): number {
  return verdictCriteria.reduce((sum, c) => sum + verdict[c].score, 0);
}

/** Pass = a total of at least 6 of 8 and no criterion scored 0. */
export function verdictPassed(verdict: Verdict): boolean {
  return verdictTotal(verdict) >= 6 && verdictCriteria.every((c) => verdict[c].score > 0);
}

/**
 * How one check command ended. `not-run`: it could not run (its setup failed, the network was
 * unreachable, a tool is missing), which is never reported as passed.
 */
export const CheckOutcome = z.enum(['passed', 'failed', 'timed-out', 'not-run']);
export type CheckOutcome = z.infer<typeof CheckOutcome>;

/** Task classes the router assigns before a run; each sets the run's budgets. */
export const TaskClass = z.enum(['small-fix', 'multi-file', 'architecture', 'unclear']);
export type TaskClass = z.infer<typeof TaskClass>;
