import { blockingReasons, NO_PULL_REQUEST } from '../../../src/core/evidence.ts';
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
  const ordered = groupsByCommit(model);
  return (
    <div class="checks-view" id="checks">
      <PullRequestState model={model} />
      {ordered.length === 0 && <p class="muted card">No checks have run yet.</p>}
      {ordered.map((g) => (
        <CheckGroup group={g} hasPr={model.pr !== undefined} key={g.commit} />
      ))}
    </div>
  );
}

/** The checks, verdicts, gate decisions and CI failures per commit, the commit with the latest first. */
function groupsByCommit(model: SessionModel): Group[] {
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
  return [...groups.values()].sort((a, b) => seqOf(b.last) - seqOf(a.last));
}

/** The pull request's link, and whether the latest gate made it ready for review or kept it a draft. */
function PullRequestState({ model }: { model: SessionModel }) {
  const prHref = safeHref(model.pr?.url);
  const gate = model.gates.at(-1);
  return (
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
  );
}

/**
 * The gate's word for a commit. A commit that passed every gate is green even when no pull request
 * was there to mark ready (a branch-only session, a plan that refuses drafts): that is said apart.
 */
function gateBadge(gate: ReviewGate, hasPr: boolean): { text: string; good: boolean; reasons: string[] } {
  if (gate.ready) return { text: 'ready', good: true, reasons: [] };
  const reasons = blockingReasons(gate);
  if (reasons.length === 0) return { text: 'passed', good: true, reasons: [] };
  return { text: hasPr ? 'kept as draft' : 'not ready', good: false, reasons };
}

/** One commit: its gate decision (with the reasons it is not ready), then its checks, verdicts and CI failures. */
function CheckGroup({ group: g, hasPr }: { group: Group; hasPr: boolean }) {
  const gate = g.gates.at(-1);
  const badge = gate && gateBadge(gate, hasPr);
  return (
    <section class="card check-group" data-commit={g.commit}>
      <h3>
        Commit <code>{g.commit.slice(0, 10)}</code>
        {badge && <span class={`badge gate ${badge.good ? 's-completed' : 's-queued'}`}>{badge.text}</span>}
      </h3>
      {badge && badge.reasons.length > 0 && (
        <ul class="reasons">
          {badge.reasons.map((r) => (
            <li>{r}</li>
          ))}
        </ul>
      )}
      {gate && !gate.ready && gate.reasons.includes(NO_PULL_REQUEST) && (
        <p class="muted no-pr">No pull request was opened for this commit, so none was marked ready.</p>
      )}
      <ul class="plain">
        {g.checks.map((c) => (
          <CheckItem check={c} key={c.key} />
        ))}
        {g.verdicts.map((v) => (
          <VerdictItem verdict={v} key={v.key} />
        ))}
        {g.ci.map((f) => (
          <CiFailureItem failure={f} key={f.key} />
        ))}
      </ul>
    </section>
  );
}

/** A check's outcome, command, exit code and time, opening to its reason and the head and tail of its log. */
function CheckItem({ check: c }: { check: CheckRun }) {
  return (
    <li>
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
  );
}

/** The verifier's verdict: its outcome, total and summary, and each criterion's score with the reason. */
function VerdictItem({ verdict: v }: { verdict: Verdict }) {
  return (
    <li class={`verdict ${v.outcome}`} data-outcome={v.outcome}>
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
  );
}

/** A CI run that failed on the commit, with a link to its details and its log excerpt. */
function CiFailureItem({ failure: f }: { failure: CiFailure }) {
  return (
    <li class="ci-failure">
      <span class="badge s-failed">CI failed</span> {f.name}{' '}
      {safeHref(f.url) && (
        <a href={safeHref(f.url)} rel="noreferrer" target="_blank">
          details
        </a>
      )}
      <pre class="output">{f.logExcerpt}</pre>
    </li>
  );
}
