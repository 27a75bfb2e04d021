import { modelTotals, totalTokens, type ModelTotals, type TaskOutcome } from './eval-outcome.ts';

/** One model's results as `patchbay eval` prints them, and who judged them (`selfGraded`: the model itself). */
export type ModelRun = { model: string; verifier: string; selfGraded: boolean; outcomes: TaskOutcome[] };

const headers = [
  'task',
  'class',
  'verified',
  'ready',
  'hidden tests',
  'ready, hidden failing',
  'questions',
  'tokens',
  'cost',
  'wall',
];

/**
 * A table per model: a row per task and a total row, then (for several models) one row per model
 * side by side. `yes`/`no` per task; counts in the total rows.
 */
export function renderEvalTables(runs: readonly ModelRun[]): string {
  const parts = runs.map(
    (run) =>
      `Model ${run.model}, judged by ${run.selfGraded ? 'itself (a self-grade)' : run.verifier}\n${table(headers, [...run.outcomes.map(taskRow), totalRow('total', modelTotals(run.outcomes))])}`,
  );
  if (runs.length > 1) {
    const rows = runs.map((run) => totalRow(run.model, modelTotals(run.outcomes)));
    parts.push(
      `Models compared\n${table(
        [
          'model',
          'tasks',
          'verified',
          'ready',
          'hidden tests',
          'ready, hidden failing',
          'questions',
          'tokens',
          'cost',
          'wall',
        ],
        rows.map(([model, ...rest]) => [model!, ...rest]),
      )}`,
    );
  }
  return `${parts.join('\n\n')}\n`;
}

function taskRow(o: TaskOutcome): string[] {
  const hidden = o.hidden.outcome === 'not-run' ? 'not run' : o.hidden.outcome;
  return [
    o.task,
    o.class,
    yesNo(o.verified),
    yesNo(o.ready),
    hidden,
    o.readyWithHiddenFailing ? 'YES' : 'no',
    String(o.questions),
    String(totalTokens(o.usage)),
    cost(o.costUsd),
    seconds(o.wallMs),
  ];
}

function totalRow(label: string, t: ModelTotals): string[] {
  const of = (n: number) => `${n}/${t.tasks}`;
  // The per-model comparison has a `tasks` column where a task row has its class.
  return [
    label,
    String(t.tasks),
    of(t.verified),
    of(t.ready),
    `${of(t.hiddenPassed)} passed`,
    String(t.readyWithHiddenFailing),
    String(t.questions),
    String(t.tokens),
    cost(t.costUsd),
    seconds(t.wallMs),
  ];
}

function yesNo(value: boolean): string {
  return value ? 'yes' : 'no';
}

function cost(usd: number | null): string {
  return usd === null ? 'unknown' : `$${usd.toFixed(4)}`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function table(head: readonly string[], rows: readonly string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
