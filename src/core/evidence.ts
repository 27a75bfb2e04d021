import type { CheckOutcome, Verdict } from './verdict.ts';

/** What a pull request carries as evidence for one commit: checks, verdict, what could not be checked. */
export type Evidence = {
  commit: string;
  checks: {
    name: string;
    command: string;
    outcome: CheckOutcome;
    exitCode: number | null;
    durationMs: number;
    reason?: string | undefined;
  }[];
  verdict?: {
    outcome: 'passed' | 'failed' | 'not-run';
    total?: number;
    scores?: Omit<Verdict, 'summary'>;
    summary: string;
  };
};

/** The gate's decision for one commit: ready for review, or draft with the reasons. */
export type GateDecision = { commit: string; ready: boolean; reasons: string[]; evidence: Evidence };

export const noChecksReason = 'no checks were found for this repository, so nothing ran on this commit';

/** Where a repository's checks come from, for a PR body or thread that found none. */
export const howToAddChecks =
  'Add a `test` script to package.json (or a `test` target to the Makefile, or a CI workflow that runs its tests on `pull_request`), or list the checks in the repository knowledge (`PUT /api/repos/<repo>/knowledge`).';

/**
 * The decision for a commit the gate did not judge (a later push by the agent, a check or a person):
 * never ready, whatever was decided for the commit that was judged.
 */
export function unjudgedCommit(commit: string, judged: string): GateDecision {
  return {
    commit,
    ready: false,
    reasons: [
      `${commit.slice(0, 12)} is not the commit the checks and the verifier judged (${judged.slice(0, 12)}), so it is not verified`,
    ],
    evidence: { commit, checks: [] },
  };
}

/**
 * Ready only when every known check ran and passed and the verdict passed, all on this commit.
 * A check that did not run is never a pass.
 */
export function decideGate(evidence: Evidence, extraReasons: readonly string[] = []): GateDecision {
  const reasons: string[] = [...extraReasons];
  // The verifier alone is not verification: with nothing run, a PR is never called checked.
  if (evidence.checks.length === 0) reasons.push(noChecksReason);
  for (const c of evidence.checks) {
    if (c.outcome === 'not-run') reasons.push(`\`${c.command}\` could not run${c.reason ? `: ${c.reason}` : ''}`);
    else if (c.outcome !== 'passed')
      reasons.push(`\`${c.command}\` ${c.outcome === 'timed-out' ? 'timed out' : `failed (exit ${c.exitCode})`}`);
  }
  if (!evidence.verdict) reasons.push('the change was not verified');
  else if (evidence.verdict.outcome === 'not-run')
    reasons.push(`the verifier gave no verdict: ${evidence.verdict.summary}`);
  else if (evidence.verdict.outcome === 'failed')
    reasons.push(`the verifier did not pass it (${evidence.verdict.total}/8)`);
  return { commit: evidence.commit, ready: reasons.length === 0, reasons, evidence };
}

/** The reason a commit that passed its gates is not "ready": there is no pull request to mark. */
export const NO_PULL_REQUEST = 'no pull request to mark ready';

/** What kept a published gate from ready besides there being no pull request: none when its commit passed every gate. */
export function blockingReasons(gate: { reasons: readonly string[] }): string[] {
  return gate.reasons.filter((r) => r !== NO_PULL_REQUEST);
}

/** The gate as published (the `review-gate` event): ready only when a pull request was marked so. */
export function publishedGate(
  decision: GateDecision,
  hasPullRequest: boolean,
): { commit: string; ready: boolean; reasons: string[] } {
  return {
    commit: decision.commit,
    ready: decision.ready && hasPullRequest,
    reasons: hasPullRequest ? decision.reasons : [...decision.reasons, NO_PULL_REQUEST],
  };
}

/**
 * A published gate in words, the same on every surface (status line, timeline, terminal), so no
 * page says "kept as draft" beside "ready for review": with no pull request nothing is a draft.
 */
export function describeGate(
  gate: { commit: string; ready: boolean; reasons: readonly string[] },
  shaLength = 12,
): string {
  const at = gate.commit.slice(0, shaLength);
  if (gate.ready) return `ready for review at ${at}`;
  const others = blockingReasons(gate);
  if (others.length === gate.reasons.length) return `kept as draft at ${at}: ${others.join('; ')}`;
  return others.length === 0
    ? `passed its gates at ${at}; ${NO_PULL_REQUEST}`
    : `not ready at ${at} (no pull request): ${others.join('; ')}`;
}

const icon = { passed: '✅', failed: '❌', 'timed-out': '⏱️', 'not-run': '⚪' } as const;

/** The PR body's evidence section (Markdown), kept current across reworks. */
export function renderEvidence(decision: GateDecision): string {
  const { evidence } = decision;
  const checks = evidence.checks.length
    ? evidence.checks
        .map(
          (c) =>
            `| ${icon[c.outcome]} ${c.outcome} | \`${c.command.replace(/\|/g, '\\|')}\` | ${c.outcome === 'not-run' ? '—' : `${(c.durationMs / 1000).toFixed(1)} s`} |`,
        )
        .join('\n')
    : '';
  const v = evidence.verdict;
  const verdict = v?.scores
    ? [
        `Verifier: **${v.outcome}** (${v.total}/8). ${v.summary.replace(/\n/g, ' ')}`,
        '',
        '| criterion | score | reason |',
        '|---|---|---|',
        ...(['relevance', 'completeness', 'correctness', 'scope'] as const).map(
          (k) =>
            `| ${k} | ${v.scores![k].score}/2 | ${v.scores![k].reason.replace(/\n/g, ' ').replace(/\|/g, '\\|')} |`,
        ),
      ].join('\n')
    : v
      ? `Verifier: **${v.outcome}**: ${v.summary}`
      : 'Verifier: not run.';
  const notChecked = evidence.checks.filter((c) => c.outcome === 'not-run');
  return [
    `## Evidence for ${evidence.commit.slice(0, 12)}`,
    '',
    decision.ready
      ? '**Ready for review**: every check passed and the verifier passed this commit.'
      : `**Draft**: ${decision.reasons.join('; ')}.`,
    '',
    ...(checks
      ? ['| result | check | duration |', '|---|---|---|', checks]
      : [`No checks were found for this repository. ${howToAddChecks}`]),
    '',
    verdict,
    ...(notChecked.length
      ? ['', '**Could not be checked:**', ...notChecked.map((c) => `- \`${c.command}\`: ${c.reason ?? 'did not run'}`)]
      : []),
  ].join('\n');
}
