import type { VerdictCriterion } from '../../../src/core/verdict.ts';
import { duration, dateTimeOf, safeHref } from '../format.ts';
import type { CheckRun, CiFailure, ReviewGate, SessionModel, Verdict } from '../session-model.ts';

type Group = {
  commit: string;
  checks: CheckRun[];
  verdicts: Verdict[];
  gates: ReviewGate[];
  ci: CiFailure[];
  last: string;
};

// Type-only import: the client must not bundle zod. The record keeps the list complete.
const criteriaMap: Record<VerdictCriterion, true> = {
  relevance: true,
  completeness: true,
  correctness: true,
  scope: true,
};
const verdictCriteria = Object.keys(criteriaMap) as VerdictCriterion[];

const outcomeClass = (outcome: string) =>
  outcome === 'passed' ? 's-completed' : outcome === 'not-run' ? 's-queued' : 's-failed';

/**
 * Per commit, newest first: the checks that ran on it with their logs, the verifier's verdict with
 * its four scores, the review gate's decision and CI failures; on top, the PR and its draft state.
 */
export function ChecksView({ model }: { model: SessionModel; version: number }) {
  const groups = new Map<string, Group>();
  const group = (commit: string, key: string) => {
    let g = groups.get(commit);
    if (!g) {
      g = { commit, checks: [], verdicts: [], gates: [], ci: [], last: key };
      groups.set(commit, g);
    }
    g.last = key;
    return g;
  };
  for (const c of model.checks) group(c.commit, c.key).checks.push(c);
  for (const v of model.verdicts) group(v.commit, v.key).verdicts.push(v);
  for (const gate of model.gates) group(gate.commit, gate.key).gates.push(gate);
  for (const f of model.ciFailures) group(f.commit, f.key).ci.push(f);
  const seqOf = (key: string) => Number(key.slice(1));
  const ordered = [...groups.values()].sort((a, b) => seqOf(b.last) - seqOf(a.last));
  const prHref = safeHref(model.pr?.url);
  const gate = model.gates.at(-1);
  return (
    <div class="checks-view" id="checks">
      <div class="card pr-state">
        <b>Pull request:</b>{' '}
        {model.pr && prHref ? (
          <>
            <a href={prHref} rel="noreferrer" target="_blank">
              #{model.pr.number}
            </a>{' '}
            <span id="pr-state" class={`badge ${gate?.ready ? 's-completed' : 's-queued'}`}>
              {gate?.ready ? `ready for review at ${gate.commit.slice(0, 10)}` : 'draft'}
            </span>
          </>
        ) : (
          <span class="muted">not opened</span>
        )}
      </div>
      {ordered.length === 0 && <p class="muted card">No checks have run yet.</p>}
      {ordered.map((g) => (
        <section class="card check-group" data-commit={g.commit} key={g.commit}>
          <h3>
            Commit <code>{g.commit.slice(0, 10)}</code>
            {g.gates.at(-1) && (
              <span class={`badge gate ${g.gates.at(-1)!.ready ? 's-completed' : 's-queued'}`}>
                {g.gates.at(-1)!.ready ? 'ready' : model.pr ? 'kept as draft' : 'not ready'}
              </span>
            )}
          </h3>
          {g.gates.at(-1) && !g.gates.at(-1)!.ready && g.gates.at(-1)!.reasons.length > 0 && (
            <ul class="reasons">
              {g.gates.at(-1)!.reasons.map((r) => (
                <li>{r}</li>
              ))}
            </ul>
          )}
          <ul class="plain">
            {g.checks.map((c) => (
              <li key={c.key}>
                <details class={`check ${c.outcome}`} data-check={c.name} data-outcome={c.outcome}>
                  <summary>
                    <span class={`badge ${outcomeClass(c.outcome)}`}>{c.outcome}</span>{' '}
                    <b>{c.phase === 'setup' ? `setup ${c.name}` : c.name}</b> <code>{c.command}</code>{' '}
                    <span class="muted">
                      {c.exitCode !== null && `exit ${c.exitCode} · `}
                      {duration(c.durationMs)} · <time dateTime={c.at}>{dateTimeOf(c.at)}</time>
                    </span>
                  </summary>
                  {c.reason && <p class="reason">{c.reason}</p>}
                  <pre class="output">{[c.logHead, c.logTail].filter(Boolean).join('\n…\n') || '(no output)'}</pre>
                </details>
              </li>
            ))}
            {g.verdicts.map((v) => (
              <li key={v.key} class={`verdict ${v.outcome}`} data-outcome={v.outcome}>
                <span class={`badge ${outcomeClass(v.outcome)}`}>verdict {v.outcome}</span>
                {v.total !== undefined && <b> {v.total}/8</b>} <span class="muted">attempt {v.attempt}</span>
                <div>{v.summary}</div>
                {v.scores && (
                  <dl class="scores">
                    {verdictCriteria.map((c) => (
                      <>
                        <dt>
                          {c} <b>{v.scores![c].score}/2</b>
                        </dt>
                        <dd>{v.scores![c].reason}</dd>
                      </>
                    ))}
                  </dl>
                )}
              </li>
            ))}
            {g.ci.map((f) => (
              <li key={f.key} class="ci-failure">
                <span class="badge s-failed">CI failed</span> {f.name}{' '}
                {safeHref(f.url) && (
                  <a href={safeHref(f.url)} rel="noreferrer" target="_blank">
                    details
                  </a>
                )}
                <pre class="output">{f.logExcerpt}</pre>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </div>
  );
}
