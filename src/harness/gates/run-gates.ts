import type { ModelImage } from '../../core/transcript.ts';
import { usageCost } from '../../models/model-catalog.ts';
import type { EventOf, StoredEvent } from '../../core/events.ts';
import { verdictCriteria, verdictPassed, verdictTotal } from '../../core/verdict.ts';
import type { CheckRun } from '../checks/check-store.ts';
import { describeFailure, failureSignature } from '../checks/run-checks.ts';
import { type EvidenceRepo, takeEvidence } from '../../git/evidence-repo.ts';
import { judgedChange } from '../../git/judged-change.ts';
import { verifyChange } from '../verify/verifier.ts';
import { verifierDiff } from '../verify/verifier-diff.ts';
import { decideGate, type Evidence, type GateDecision } from '../../core/evidence.ts';
import { runChecks } from './gate-checks.ts';
import type { GateContext } from './gate-deps.ts';
import { harnessActor, lastHumanSeq, outsideTaskMarker, taskText } from './harness-messages.ts';

export type GateStep =
  /** A harness message went to the agent; run it again. */
  | { kind: 'run-again' }
  /** Publish with this decision; ask the thread when `question` is set. */
  | { kind: 'publish'; decision: GateDecision; question?: GateQuestion };

/** What people are asked about a change the gates did not pass. */
export type GateQuestion = { text: string; choices: string[]; recommended: string };

/**
 * The gates after the agent says it is done and its work is committed as `commit`: checks, then
 * the verifier, then the decision. Failing checks go back to the agent while the set of failures
 * changes; a failed verdict gets one rework; after that the humans decide.
 */
export async function gateCommit(
  ctx: GateContext,
  input: { commit: string; baseCommit: string; summary: string; images?: ModelImage[] },
): Promise<GateStep> {
  const { commit } = input;
  const events = await ctx.store.events(ctx.sessionId);
  const since = lastHumanSeq(events);
  const recent = events.filter((e) => e.seq > since);

  // Everything the gate judges is computed from the commit's objects on the host, never in the
  // agent's workspace (its .git could hide a file from the diff or put modules above the checkout).
  const evidence = await takeEvidence({
    sandbox: ctx.sandbox,
    workspaceDir: ctx.evidence.workspaceDir,
    dataDir: ctx.evidence.dataDir,
    repo: ctx.evidence.repo,
    commit,
    baseCommit: input.baseCommit,
    signal: ctx.signal,
  });
  let runs: CheckRun[];
  let verdict: NonNullable<Evidence['verdict']>;
  let stuck: string | undefined;
  try {
    runs = await runChecks(ctx, evidence);
    const failures = runs.filter((r) => r.outcome === 'failed' || r.outcome === 'timed-out');
    const judged = failures.length > 0 ? await judgeFailures(ctx, input, runs, failures, recent) : undefined;
    if (judged === 'run-again') return { kind: 'run-again' };
    stuck = judged;
    const attempt = recent.filter((e) => e.event.type === 'verification-finished').length + 1;
    verdict = await verifyCommit(ctx, evidence, input, { attempt, runs, task: taskText(events) });
  } finally {
    await evidence.close();
  }
  return afterVerdict(ctx, { commit, runs, verdict, stuck, recent });
}

/** The decision after the verdict: one rework for a first failed verdict, else publish (and ask, if stuck or failed). */
async function afterVerdict(
  ctx: GateContext,
  judged: {
    commit: string;
    runs: CheckRun[];
    verdict: NonNullable<Evidence['verdict']>;
    stuck: string | undefined;
    recent: readonly StoredEvent[];
  },
): Promise<GateStep> {
  const { commit, runs, verdict, stuck, recent } = judged;
  const failures = runs.filter((r) => r.outcome === 'failed' || r.outcome === 'timed-out');
  const attempt = recent.filter((e) => e.event.type === 'verification-finished').length + 1;
  const decision = decideGate({ commit, checks: runs, verdict }, stuck ? [stuck] : []);
  if (verdict.outcome === 'failed' && attempt === 1 && !stuck) {
    await tellAgent(
      ctx,
      [
        `An independent reviewer did not pass your change (${verdict.total}/8). Its critique:`,
        '',
        quoteVerdict(verdict),
        '',
        'Rework the change on this branch to address it, then finish again.',
      ].join('\n'),
    );
    return { kind: 'run-again' };
  }
  const question = gateQuestion(stuck, failures, verdict);
  return { kind: 'publish', decision, ...(question && { question }) };
}

/**
 * Failing checks: sent back to the agent ('run-again') while a fix may still help; else the reason
 * the session stopped trying, for people to decide.
 */
async function judgeFailures(
  ctx: GateContext,
  input: { commit: string; summary: string },
  runs: readonly CheckRun[],
  failures: readonly CheckRun[],
  recent: readonly StoredEvent[],
): Promise<string | 'run-again'> {
  const { commit } = input;
  const signature = failureSignature(runs);
  const earlier = previousSignatures(recent);
  const outside = extractOutside(input.summary);
  const rounds = checkRounds(recent) + 1;
  const maxRounds = ctx.gates.maxCheckRounds ?? defaultMaxCheckRounds;
  // The same commit again: the agent finished without committing anything, however its log differs.
  const again = recent.some(
    ({ event }) =>
      event.type === 'check-finished' &&
      event.phase === 'check' &&
      event.commit === commit &&
      event.outcome !== 'passed',
  );
  if (outside) return `the agent says the failure is outside the task: ${outside}`;
  if (again || earlier.has(signature)) return 'the same checks failed again with nothing new';
  if (rounds >= maxRounds)
    return `the checks failed in ${rounds} rounds of fixes, the most a request gets before people decide`;
  await tellAgent(
    ctx,
    [
      `The harness ran the repository's checks on your commit ${commit.slice(0, 12)} and ${failures.length === 1 ? 'one failed' : `${failures.length} failed`}:`,
      '',
      ...failures.map(describeFailure),
      '',
      `Fix the cause and finish again; the checks run again on your next commit. If the failure is outside your task (it fails on the base branch too, or needs something you cannot change), say so in your final reply on a line starting with \`${outsideTaskMarker}\` and the reason.`,
    ].join('\n'),
  );
  return 'run-again';
}

/** The independent verifier's verdict on the change from `baseCommit` to `commit`, recorded with its usage. */
async function verifyCommit(
  ctx: GateContext,
  evidence: EvidenceRepo,
  input: { commit: string; images?: ModelImage[] | undefined },
  round: { attempt: number; runs: CheckRun[]; task: string },
): Promise<NonNullable<Evidence['verdict']>> {
  const { commit } = input;
  const { attempt } = round;
  const result = await verifyChange(ctx.gates.verifier, {
    task: round.task,
    knowledge: ctx.knowledgeText,
    checks: round.runs,
    change: verifierDiff(await judgedChange(evidence, ctx.signal), undefined, checkFiles(ctx)),
    ...(input.images?.length && { images: input.images }),
    signal: ctx.signal,
  });
  let verdict: NonNullable<Evidence['verdict']>;
  if (result.kind === 'verdict') {
    const { summary, ...scores } = result.verdict;
    verdict = {
      outcome: verdictPassed(result.verdict) ? 'passed' : 'failed',
      total: verdictTotal(result.verdict),
      scores,
      summary,
    };
  } else {
    verdict = { outcome: 'not-run', summary: result.reason };
  }
  await ctx.gates.checks.addVerdict(ctx.sessionId, {
    commit,
    attempt,
    outcome: verdict.outcome,
    verdict: result.kind === 'verdict' ? result.verdict : null,
    summary: verdict.summary,
  });
  await ctx.store.commitStep(ctx.sessionId, {
    events: [
      {
        event: {
          type: 'verification-finished',
          commit,
          attempt,
          outcome: verdict.outcome,
          ...(verdict.total !== undefined && { total: verdict.total }),
          ...(verdict.scores && { scores: verdict.scores }),
          summary: verdict.summary,
        },
      },
      ...(result.usage
        ? [
            {
              event: {
                type: 'usage' as const,
                turn: 0,
                model: ctx.gates.verifier.model,
                ...result.usage,
                ...usageCost(ctx.gates.verifier, result.usage),
              },
            },
          ]
        : []),
    ],
    ...(result.usage && { usage: result.usage }),
  });
  return verdict;
}

/** What people are asked when the gates did not pass the change and the agent stopped trying. */
function gateQuestion(
  stuck: string | undefined,
  failures: readonly CheckRun[],
  verdict: NonNullable<Evidence['verdict']>,
): GateQuestion | undefined {
  const choices = ['Keep it as a draft', 'Try another approach', 'Stop'];
  const recommended = 'Keep it as a draft';
  if (stuck) {
    const text = [
      `Checks still fail and I stopped: ${stuck}.`,
      '',
      ...failures.map((f) => `> \`${f.command}\` exit ${f.exitCode}`),
      '',
      'The pull request stays a draft. Keep it as a draft, try another approach, or stop?',
    ].join('\n');
    return { text, choices, recommended };
  }
  if (verdict.outcome === 'failed') {
    const text = [
      `The reviewer did not pass the change after a rework (${verdict.total}/8), so the pull request stays a draft.`,
      '',
      quoteVerdict(verdict),
      '',
      'Keep it as a draft, try another approach, or stop?',
    ].join('\n');
    return { text, choices, recommended };
  }
  return undefined;
}

function quoteVerdict(verdict: NonNullable<Evidence['verdict']>): string {
  const lines = [`> ${verdict.summary.replace(/\n/g, '\n> ')}`];
  if (verdict.scores) {
    for (const c of verdictCriteria) {
      const s = verdict.scores[c];
      if (s.score < 2) lines.push(`> - ${c} ${s.score}/2: ${s.reason.replace(/\n/g, ' ')}`);
    }
  }
  return lines.join('\n');
}

/** Check-fix rounds a request gets before the session asks people instead of trying again. */
export const defaultMaxCheckRounds = 5;

/** Commits whose checks already ran (and failed) since the latest request. */
function checkRounds(events: readonly StoredEvent[]): number {
  const commits = new Set<string>();
  for (const { event } of events)
    if (
      event.type === 'check-finished' &&
      event.phase === 'check' &&
      (event.outcome === 'failed' || event.outcome === 'timed-out')
    )
      commits.add(event.commit);
  return commits.size;
}

/** The repository files the knowledge document read its checks and setup from (`package.json scripts.test` → package.json). */
function checkFiles(ctx: GateContext): Set<string> {
  const document = ctx.knowledge?.document;
  const commands = [...(document?.checks ?? []), ...(document?.setup ?? [])];
  return new Set(commands.map((c) => c.source.split(' ')[0]!).filter(Boolean));
}

function previousSignatures(events: readonly StoredEvent[]): Set<string> {
  const byCommit = new Map<string, CheckRun[]>();
  for (const { event } of events) {
    if (event.type !== 'check-finished' || event.phase !== 'check') continue;
    const e = event as EventOf<'check-finished'>;
    const list = byCommit.get(e.commit) ?? [];
    list.push({ ...e, startedAt: new Date(0), finishedAt: new Date(0) });
    byCommit.set(e.commit, list);
  }
  return new Set([...byCommit.values()].map(failureSignature).filter(Boolean));
}

function extractOutside(summary: string): string | undefined {
  const line = summary.split('\n').find((l) => l.trim().toUpperCase().startsWith(outsideTaskMarker));
  return line ? line.trim().slice(outsideTaskMarker.length).trim() || 'no reason given' : undefined;
}

async function tellAgent(ctx: GateContext, text: string): Promise<void> {
  await ctx.store.commitStep(ctx.sessionId, {
    events: [{ event: { type: 'user-message', actor: harnessActor, text } }],
  });
}
