import { describe, expect, it } from 'vitest';
import { insightsCsv, insightsReport, metricsOf } from '../../src/api/insights-report.ts';
import { InsightsQuery } from '../../src/api/insights-routes.ts';
import type { PullFacts, SessionFacts } from '../../src/sessions/store/session-facts.ts';

const t0 = new Date('2026-03-01T00:00:00Z');
const hours = (h: number) => new Date(t0.getTime() + h * 3_600_000);
function facts(over: Partial<Omit<SessionFacts, 'pull'>> & { pull?: Partial<PullFacts> | null } = {}): SessionFacts {
  const { pull, ...rest } = over;
  return {
    id: 's',
    createdAt: t0,
    repo: 'r',
    surface: 'slack',
    model: 'm',
    taskClass: 'small-fix',
    tokens: 10,
    costUsd: 1,
    wallMs: 1000,
    checksPassed: 1,
    checksFailed: 0,
    verdict: { total: 8, scores: { relevance: 2, completeness: 2, correctness: 2, scope: 2 } },
    reworks: 0,
    questions: 0,
    firstReplyMs: 1000,
    toPrMs: 5000,
    ...rest,
    pull:
      pull === null
        ? null
        : {
            number: 1,
            url: 'u',
            state: 'open',
            openedAt: t0,
            finishedAt: null,
            finishedBy: null,
            humanCommits: 0,
            reviewRounds: 0,
            reverted: false,
            mergeCi: null,
            ...pull,
          },
  };
}

describe('insights figures', () => {
  it('merge rate over decided PRs only, medians, human commits and cost per merged PR', () => {
    const m = metricsOf([
      facts({ pull: { state: 'merged', finishedAt: hours(1), humanCommits: 2 } }),
      facts({ pull: { state: 'merged', finishedAt: hours(3), humanCommits: 0, reverted: true } }),
      facts({ pull: { state: 'merged', finishedAt: hours(8), humanCommits: 1, mergeCi: 'failure' } }),
      facts({ pull: { state: 'closed', finishedAt: hours(2) } }),
      facts({ pull: { state: 'open' }, firstReplyMs: 3000 }),
      facts({ pull: null, toPrMs: null, costUsd: 2 }),
    ]);
    expect(m).toMatchObject({
      sessions: 6,
      prsOpened: 5,
      merged: 3,
      closed: 1,
      mergeRate: 0.75,
      reverts: 1,
      mergeCiFailures: 1,
      humanCommitsPerMerged: 1,
      costPerMergedUsd: 7 / 3,
    });
    expect(m.medianTimeToMergeMs).toBe(3 * 3_600_000);
    expect(m.medianToPrMs).toBe(5000);
    expect(m.medianFirstReplyMs).toBe(1000);
  });

  it('no decided PR: no merge rate; an unknown cost: no cost per merged PR', () => {
    expect(metricsOf([facts({ pull: { state: 'open' }, costUsd: null })])).toMatchObject({
      mergeRate: null,
      costPerMergedUsd: null,
      medianTimeToMergeMs: null,
      humanCommitsPerMerged: null,
    });
  });

  it('groups by the asked key, and calibrates on decided PRs with a verdict only', () => {
    const low = { total: 5, scores: { relevance: 2, completeness: 1, correctness: 1, scope: 1 } };
    const report = insightsReport(
      [
        facts({ model: 'b', pull: { state: 'merged', finishedAt: hours(1) } }),
        facts({ model: 'a', verdict: low, pull: { state: 'closed', finishedAt: hours(1) } }),
        facts({ model: 'a', verdict: low, pull: { state: 'merged', finishedAt: hours(1) } }),
        facts({ model: 'a', verdict: null, pull: { state: 'merged', finishedAt: hours(1) } }),
        facts({ model: 'a', pull: { state: 'open' } }),
      ],
      { from: t0, to: hours(24), groupBy: 'model' },
    );
    expect(report.groups.map((g) => [g.key, g.sessions, g.merged])).toEqual([
      ['a', 4, 2],
      ['b', 1, 1],
    ]);
    expect(report.calibration.byBand.find((b) => b.band === '5')).toEqual({
      band: '5',
      decided: 2,
      merged: 1,
      mergeRate: 0.5,
    });
    expect(report.calibration.byBand.find((b) => b.band === '8')).toEqual({
      band: '8',
      decided: 1,
      merged: 1,
      mergeRate: 1,
    });
    expect(report.calibration.byDimension.find((d) => d.dimension === 'scope' && d.score === 1)).toEqual({
      dimension: 'scope',
      score: 1,
      decided: 2,
      merged: 1,
      mergeRate: 0.5,
    });
  });

  it('writes CSV as RFC 4180 does: a header, quoted keys with commas or quotes, an (all) line', () => {
    const report = insightsReport([facts({ repo: 'https://x/o/"a",b' })], { from: t0, to: hours(24), groupBy: 'repo' });
    const lines = insightsCsv(report).split('\r\n');
    expect(lines[0]!.split(',').slice(0, 3)).toEqual(['repo', 'sessions', 'prsOpened']);
    expect(lines[1]).toMatch(/^"https:\/\/x\/o\/""a"",b",1,1,0,0,,/);
    expect(lines[2]).toMatch(/^\(all\),1,/);
    expect(lines[3]).toBe('');
  });
});

describe('the insights query', () => {
  it.each([
    [{}, true],
    [{ from: '2026-01-01', to: '2026-02-01', groupBy: 'taskClass', format: 'csv' }, true],
    [{ from: '2026-01-01T00:00:00Z' }, true],
    [{ groupBy: 'colour' }, false],
    [{ from: 'last week' }, false],
    [{ from: '2026-02-01', to: '2026-01-01' }, false],
    [{ from: '2024-01-01', to: '2026-01-01' }, false],
    [{ format: 'xml' }, false],
    [{ limit: '3' }, false],
  ])('%j valid: %s', (query, valid) => expect(InsightsQuery.safeParse(query).success).toBe(valid));

  it('defaults to the 30 days before now, by repository', () => {
    const q = InsightsQuery.parse({});
    expect(q.groupBy).toBe('repo');
    expect(q.to.getTime() - q.from.getTime()).toBe(30 * 24 * 3_600_000);
  });
});
