import { verdictCriteria } from '../core/verdict.ts';
import type { SessionFacts } from '../sessions/store/session-facts.ts';

export const groupings = ['repo', 'surface', 'model', 'taskClass'] as const;
export type Grouping = (typeof groupings)[number];

/** The figures of one group of sessions (or of all of them). Times in milliseconds, costs in USD. */
export type InsightMetrics = {
  sessions: number;
  prsOpened: number;
  merged: number;
  closed: number;
  /** merged / (merged + closed): open pull requests are not decided yet. Null with none decided. */
  mergeRate: number | null;
  medianTimeToMergeMs: number | null;
  /** Commits people pushed after Patchbay's last one, per merged pull request. */
  humanCommitsPerMerged: number | null;
  reviewRoundsPerPr: number | null;
  /** Merged pull requests whose merge commit was reverted on the default branch within 14 days. */
  reverts: number;
  /** CI on the default branch failed on the merge commit. */
  mergeCiFailures: number;
  /** All the group's sessions' cost (merged or not) over its merged pull requests; null when a cost is unknown. */
  costPerMergedUsd: number | null;
  medianFirstReplyMs: number | null;
  medianToPrMs: number | null;
};

export type CalibrationRow = { decided: number; merged: number; mergeRate: number | null };

/** One pull request a session opened, as the report lists it (newest session first). */
export type PullRow = {
  sessionId: string;
  repo: string;
  model: string;
  taskClass: string;
  number: number;
  url: string;
  state: string;
  openedAt: string;
  finishedAt: string | null;
  finishedBy: string | null;
  humanCommits: number;
  reviewRounds: number;
  reverted: boolean;
  mergeCi: string | null;
  verdictTotal: number | null;
  costUsd: number | null;
};
export type InsightsReport = {
  from: string;
  to: string;
  groupBy: Grouping;
  totals: InsightMetrics;
  groups: (InsightMetrics & { key: string })[];
  pulls: PullRow[];
  /**
   * Whether the verifier's score predicts a merge: merge rate of decided pull requests by the last
   * verdict's total (bands of 0..8) and by each dimension's score (0, 1, 2).
   */
  calibration: {
    byBand: (CalibrationRow & { band: string })[];
    byDimension: (CalibrationRow & { dimension: string; score: number })[];
  };
};

const scoreBands = [
  { band: '0-4', min: 0, max: 4 },
  { band: '5', min: 5, max: 5 },
  { band: '6', min: 6, max: 6 },
  { band: '7', min: 7, max: 7 },
  { band: '8', min: 8, max: 8 },
];

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const ratio = (a: number, b: number) => (b === 0 ? null : a / b);

/** The figures of a set of sessions. */
export function metricsOf(facts: readonly SessionFacts[]): InsightMetrics {
  const pulls = facts.flatMap((f) => (f.pull ? [f.pull] : []));
  const merged = pulls.filter((p) => p.state === 'merged');
  const closed = pulls.filter((p) => p.state === 'closed').length;
  const cost = facts.every((f) => f.costUsd !== null) ? facts.reduce((sum, f) => sum + (f.costUsd ?? 0), 0) : null;
  const present = (values: (number | null)[]) => values.filter((v): v is number => v !== null);
  return {
    sessions: facts.length,
    prsOpened: pulls.length,
    merged: merged.length,
    closed,
    mergeRate: ratio(merged.length, merged.length + closed),
    medianTimeToMergeMs: median(merged.map((p) => (p.finishedAt ? p.finishedAt.getTime() - p.openedAt.getTime() : 0))),
    humanCommitsPerMerged: ratio(
      merged.reduce((sum, p) => sum + p.humanCommits, 0),
      merged.length,
    ),
    reviewRoundsPerPr: ratio(
      pulls.reduce((sum, p) => sum + p.reviewRounds, 0),
      pulls.length,
    ),
    reverts: merged.filter((p) => p.reverted).length,
    mergeCiFailures: merged.filter((p) => p.mergeCi === 'failure' || p.mergeCi === 'timed_out').length,
    costPerMergedUsd: cost === null ? null : ratio(cost, merged.length),
    medianFirstReplyMs: median(present(facts.map((f) => f.firstReplyMs))),
    medianToPrMs: median(present(facts.map((f) => f.toPrMs))),
  };
}

function calibrationRow(facts: readonly SessionFacts[]): CalibrationRow {
  const merged = facts.filter((f) => f.pull?.state === 'merged').length;
  return { decided: facts.length, merged, mergeRate: ratio(merged, facts.length) };
}

/** Sessions grouped by `groupBy`, each group's figures, the totals and the verifier's calibration. */
export function insightsReport(
  facts: readonly SessionFacts[],
  query: { from: Date; to: Date; groupBy: Grouping },
): InsightsReport {
  const groups = new Map<string, SessionFacts[]>();
  for (const f of facts) {
    const key = f[query.groupBy];
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const decided = facts.filter((f) => f.verdict && (f.pull?.state === 'merged' || f.pull?.state === 'closed'));
  return {
    from: query.from.toISOString(),
    to: query.to.toISOString(),
    groupBy: query.groupBy,
    totals: metricsOf(facts),
    groups: [...groups].sort(([a], [b]) => a.localeCompare(b)).map(([key, list]) => ({ key, ...metricsOf(list) })),
    pulls: facts.flatMap((f) => (f.pull ? [pullRow(f, f.pull)] : [])).reverse(),
    calibration: {
      byBand: scoreBands.map(({ band, min, max }) => ({
        band,
        ...calibrationRow(decided.filter((f) => f.verdict!.total >= min && f.verdict!.total <= max)),
      })),
      byDimension: verdictCriteria.flatMap((dimension) =>
        [0, 1, 2].map((score) => ({
          dimension,
          score,
          ...calibrationRow(decided.filter((f) => f.verdict!.scores[dimension] === score)),
        })),
      ),
    },
  };
}

function pullRow(f: SessionFacts, p: NonNullable<SessionFacts['pull']>): PullRow {
  return {
    sessionId: f.id,
    repo: f.repo,
    model: f.model,
    taskClass: f.taskClass,
    number: p.number,
    url: p.url,
    state: p.state,
    openedAt: p.openedAt.toISOString(),
    finishedAt: p.finishedAt?.toISOString() ?? null,
    finishedBy: p.finishedBy,
    humanCommits: p.humanCommits,
    reviewRounds: p.reviewRounds,
    reverted: p.reverted,
    mergeCi: p.mergeCi,
    verdictTotal: f.verdict?.total ?? null,
    costUsd: f.costUsd,
  };
}

const csvColumns: (keyof InsightMetrics)[] = [
  'sessions',
  'prsOpened',
  'merged',
  'closed',
  'mergeRate',
  'medianTimeToMergeMs',
  'humanCommitsPerMerged',
  'reviewRoundsPerPr',
  'reverts',
  'mergeCiFailures',
  'costPerMergedUsd',
  'medianFirstReplyMs',
  'medianToPrMs',
];

/** A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break. */
function csvField(value: string | number | null): string {
  const text = value === null ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One line per group and a last `(all)` line, with a header. */
export function insightsCsv(report: InsightsReport): string {
  const lines = [[report.groupBy, ...csvColumns].join(',')];
  for (const g of [...report.groups, { key: '(all)', ...report.totals }])
    lines.push([g.key, ...csvColumns.map((c) => g[c])].map(csvField).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
