import { useEffect, useState } from 'preact/hooks';
import type { CalibrationRow, Grouping, InsightMetrics, InsightsReport } from '../../../src/api/insights-report.ts';
import { api, type InsightsFilter } from '../api.ts';
import { safeHref } from '../format.ts';
import { BarChart } from './insights-chart.tsx';

const groupings: { value: Grouping; label: string }[] = [
  { value: 'repo', label: 'repository' },
  { value: 'surface', label: 'surface' },
  { value: 'model', label: 'model' },
  { value: 'taskClass', label: 'task class' },
];
const day = 24 * 60 * 60 * 1000;
const isoDay = (d: Date) => d.toISOString().slice(0, 10);

function filterFromUrl(): InsightsFilter {
  const query = new URLSearchParams(location.search);
  const groupBy = groupings.find((g) => g.value === query.get('groupBy'))?.value ?? 'repo';
  const to = query.get('to') ?? isoDay(new Date(Date.now() + day));
  const from = query.get('from') ?? isoDay(new Date(Date.now() - 30 * day));
  return { from, to, groupBy };
}

const percent = (rate: number | null) => (rate === null ? '–' : `${Math.round(rate * 100)}%`);
const number = (n: number | null, digits = 1) => (n === null ? '–' : String(Number(n.toFixed(digits))));
const usd = (n: number | null) => (n === null ? '–' : `$${n.toFixed(2)}`);
function duration(ms: number | null): string {
  if (ms === null) return '–';
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < day) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / day).toFixed(1)} d`;
}

/** `/insights`: what sessions cost and what became of their pull requests, per group, and the verifier's calibration. */
export function InsightsPage() {
  const [filter, setFilter] = useState(filterFromUrl);
  const [report, setReport] = useState<InsightsReport | undefined>();
  const [error, setError] = useState('');
  useEffect(() => {
    history.replaceState(null, '', `/insights?${new URLSearchParams(filter)}`);
    api.insights(filter).then(
      (next) => {
        setReport(next);
        setError('');
      },
      (err: Error) => setError(err.message),
    );
  }, [filter.from, filter.to, filter.groupBy]);

  return (
    <main class="insights-page">
      <section class="card">
        <div class="list-head">
          <h2>Insights</h2>
          <label>
            From{' '}
            <input
              id="insights-from"
              type="date"
              value={filter.from}
              onChange={(e) => setFilter({ ...filter, from: e.currentTarget.value })}
            />
          </label>
          <label>
            To{' '}
            <input
              id="insights-to"
              type="date"
              value={filter.to}
              onChange={(e) => setFilter({ ...filter, to: e.currentTarget.value })}
            />
          </label>
          <label>
            By{' '}
            <select
              id="insights-group"
              value={filter.groupBy}
              onChange={(e) => setFilter({ ...filter, groupBy: e.currentTarget.value as Grouping })}
            >
              {groupings.map((g) => (
                <option value={g.value}>{g.label}</option>
              ))}
            </select>
          </label>
          <a id="insights-csv" href={`/api/insights?${new URLSearchParams({ ...filter, format: 'csv' })}`} download>
            CSV
          </a>
        </div>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        {!report && !error && <p class="muted">Loading…</p>}
        {report && <Groups report={report} />}
      </section>
      {report && <Calibration report={report} />}
      {report && report.pulls.length > 0 && <Pulls report={report} />}
    </main>
  );
}

const columns: { key: keyof InsightMetrics; label: string; show: (m: InsightMetrics) => string }[] = [
  { key: 'sessions', label: 'Sessions', show: (m) => String(m.sessions) },
  { key: 'prsOpened', label: 'PRs opened', show: (m) => String(m.prsOpened) },
  { key: 'merged', label: 'Merged', show: (m) => String(m.merged) },
  { key: 'closed', label: 'Closed', show: (m) => String(m.closed) },
  { key: 'mergeRate', label: 'Merge rate', show: (m) => percent(m.mergeRate) },
  { key: 'medianTimeToMergeMs', label: 'Median time to merge', show: (m) => duration(m.medianTimeToMergeMs) },
  { key: 'humanCommitsPerMerged', label: 'Human commits / merged PR', show: (m) => number(m.humanCommitsPerMerged) },
  { key: 'reviewRoundsPerPr', label: 'Review rounds / PR', show: (m) => number(m.reviewRoundsPerPr) },
  { key: 'reverts', label: 'Reverts', show: (m) => String(m.reverts) },
  { key: 'mergeCiFailures', label: 'CI failed after merge', show: (m) => String(m.mergeCiFailures) },
  { key: 'costPerMergedUsd', label: 'Cost / merged PR', show: (m) => usd(m.costPerMergedUsd) },
  { key: 'medianFirstReplyMs', label: 'Time to first reply', show: (m) => duration(m.medianFirstReplyMs) },
  { key: 'medianToPrMs', label: 'Time to PR', show: (m) => duration(m.medianToPrMs) },
];

function Groups({ report }: { report: InsightsReport }) {
  if (report.totals.sessions === 0) return <p class="muted">No sessions in this period.</p>;
  const labels = report.groups.map((g) => g.key);
  return (
    <>
      {report.totals.prsOpened === 0 ? (
        <p class="muted" id="insights-no-prs">
          No pull requests were opened in this period, so there is nothing to chart yet: merge rates and pull request
          outcomes appear once sessions open pull requests (GitHub must be connected).
        </p>
      ) : (
        <GroupCharts report={report} labels={labels} />
      )}
      <div class="table-scroll">
        <table id="insights-groups" class="insights-table">
          <thead>
            <tr>
              <th>{groupings.find((g) => g.value === report.groupBy)?.label}</th>
              {columns.map((c) => (
                <th>{c.label}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {[...report.groups, { key: 'all', ...report.totals }].map((g) => (
              <tr data-key={g.key}>
                <th>{g.key}</th>
                {columns.map((c) => (
                  <td data-col={c.key}>{c.show(g)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The merge rate and pull request outcomes per group, drawn once there are pull requests. */
function GroupCharts({ report, labels }: { report: InsightsReport; labels: string[] }) {
  return (
    <div class="charts">
      <BarChart
        id="chart-merge-rate"
        title="Merge rate"
        labels={labels}
        max={1}
        series={[{ label: 'merge rate', values: report.groups.map((g) => g.mergeRate), color: '#2f9e44' }]}
      />
      <BarChart
        id="chart-prs"
        title="Pull requests"
        labels={labels}
        series={[
          { label: 'merged', values: report.groups.map((g) => g.merged), color: '#2f9e44' },
          { label: 'closed', values: report.groups.map((g) => g.closed), color: '#868e96' },
          { label: 'reverted', values: report.groups.map((g) => g.reverts), color: '#e03131' },
        ]}
      />
    </div>
  );
}

const rateCell = (row: CalibrationRow) => `${percent(row.mergeRate)} (${row.merged} of ${row.decided})`;

/** Merge rate of decided pull requests by the verifier's last total and by each dimension's score. */
function Calibration({ report }: { report: InsightsReport }) {
  const { byBand, byDimension } = report.calibration;
  const dimensions = [...new Set(byDimension.map((d) => d.dimension))];
  const cell = (dimension: string, score: number) =>
    byDimension.find((d) => d.dimension === dimension && d.score === score)!;
  if (byBand.every((b) => b.decided === 0))
    return (
      <section class="card">
        <h2>Verifier calibration</h2>
        <p class="muted" id="calibration-empty">
          None of this period's pull requests has been merged or closed yet: calibration compares the verifier's scores
          with what people decided, so it fills in as pull requests are merged or closed.
        </p>
      </section>
    );
  return (
    <section class="card">
      <h2>Verifier calibration</h2>
      <p class="muted">
        Of the pull requests merged or closed, how many were merged, by the verifier's score of the session's last
        commit.
      </p>
      <div class="charts">
        <BarChart
          id="chart-calibration"
          title="Merge rate by verifier score (0–8)"
          labels={byBand.map((b) => b.band)}
          max={1}
          series={[{ label: 'merge rate', values: byBand.map((b) => b.mergeRate), color: '#1971c2' }]}
        />
      </div>
      <div class="table-scroll">
        <table id="calibration-bands" class="insights-table">
          <thead>
            <tr>
              <th>Score</th>
              {byBand.map((b) => (
                <th>{b.band}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            <tr>
              <th>Merged</th>
              {byBand.map((b) => (
                <td data-band={b.band}>{rateCell(b)}</td>
              ))}
            </tr>
          </tbody>
        </table>
      </div>
      <div class="table-scroll">
        <table id="calibration-dimensions" class="insights-table">
          <thead>
            <tr>
              <th>Dimension</th>
              <th>0 (no)</th>
              <th>1 (partly)</th>
              <th>2 (yes)</th>
            </tr>
          </thead>
          <tbody>
            {dimensions.map((d) => (
              <tr data-dimension={d}>
                <th>{d}</th>
                {[0, 1, 2].map((score) => (
                  <td data-score={score}>{rateCell(cell(d, score))}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** Every pull request of the period: what became of it, next to the session's model, class, verdict and cost. */
function Pulls({ report }: { report: InsightsReport }) {
  return (
    <section class="card">
      <h2>Pull requests</h2>
      <div class="table-scroll">
        <table id="insights-pulls" class="insights-table">
          <thead>
            <tr>
              <th>Pull request</th>
              <th>State</th>
              <th>By</th>
              <th>Human commits</th>
              <th>Reviews</th>
              <th>Reverted</th>
              <th>CI after merge</th>
              <th>Verdict</th>
              <th>Model</th>
              <th>Task class</th>
              <th>Cost</th>
            </tr>
          </thead>
          <tbody>
            {report.pulls.map((p) => (
              <tr data-session={p.sessionId}>
                <th>
                  <a href={safeHref(p.url)} rel="noreferrer" target="_blank">
                    #{p.number}
                  </a>{' '}
                  <a href={`/sessions/${encodeURIComponent(p.sessionId)}`}>session</a>
                </th>
                <td data-col="state">{p.state}</td>
                <td data-col="by">{p.finishedBy ?? '–'}</td>
                <td data-col="humanCommits">{p.humanCommits}</td>
                <td data-col="reviewRounds">{p.reviewRounds}</td>
                <td data-col="reverted">{p.reverted ? 'yes' : 'no'}</td>
                <td data-col="mergeCi">{p.mergeCi ?? '–'}</td>
                <td data-col="verdict">{p.verdictTotal === null ? '–' : `${p.verdictTotal}/8`}</td>
                <td>{p.model}</td>
                <td>{p.taskClass}</td>
                <td>{usd(p.costUsd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
