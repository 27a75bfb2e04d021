import type { Logger } from 'pino';
import type { ExecOptions, Sandbox } from '../../../sandbox/sandbox.ts';
import type { EventOf, StoredEvent } from '../../core/events.ts';
import { verdictCriteria, verdictPassed, verdictTotal } from '../../core/verdict.ts';
import type { RunLog } from '../../core/run-log.ts';
import type { CheckRun } from '../checks/check-store.ts';
import { openCommitCheckout, setupKey, workspaceSetupMarker, type CommitCheckout } from '../checks/commit-checkout.ts';
import {
  describeFailure,
  failureSignature,
  missingCommandReason,
  runCheckCommand,
  setupFailureReason,
} from '../checks/run-checks.ts';
import type { KnownCommand } from '../knowledge/knowledge-document.ts';
import type { LoadedKnowledge } from '../knowledge/load-knowledge.ts';
import { verifierDiffCommand, verifyChange } from '../verify/verifier.ts';
import { decideGate, type Evidence, type GateDecision } from '../../core/evidence.ts';
import type { GateDeps } from './gate-deps.ts';
import { harnessActor, lastHumanSeq, outsideTaskMarker, taskText } from './harness-messages.ts';

export type GateContext = {
  sessionId: string;
  store: RunLog;
  gates: GateDeps;
  sandbox: Sandbox;
  knowledge: LoadedKnowledge | undefined;
  knowledgeText: string;
  /** The commit the session's branch started from: a workspace still there, untouched, may become a setup image. */
  baseCommit?: string;
  log: Logger;
  signal: AbortSignal;
};

async function recordRun(ctx: GateContext, run: CheckRun): Promise<void> {
  await ctx.gates.checks.addRun(ctx.sessionId, run);
  await ctx.store.commitStep(ctx.sessionId, {
    events: [
      {
        event: {
          type: 'check-finished',
          commit: run.commit,
          phase: run.phase,
          name: run.name,
          command: run.command,
          outcome: run.outcome,
          exitCode: run.exitCode,
          durationMs: run.durationMs,
          logHead: run.logHead,
          logTail: run.logTail,
          ...(run.reason && { reason: run.reason }),
        },
      },
    ],
  });
}

async function headCommit(sandbox: Sandbox, signal: AbortSignal): Promise<string> {
  const r = await sandbox.exec('git rev-parse --verify HEAD', { signal, timeoutMs: 60_000 });
  return r.stdout.trim();
}

/**
 * Runs the knowledge document's setup commands in the agent's workspace before the agent, once per
 * workspace and what setup depends on: a marker in the workspace's `.git` keeps the key it ran for,
 * so a new or reaped workspace (or one on another worker) runs it again, and so does a change to a
 * lockfile or to the setup commands. What setup leaves untracked (node_modules, virtualenvs) is
 * excluded locally, so it is never committed.
 */
export async function runSetup(ctx: GateContext): Promise<void> {
  const setup = ctx.knowledge?.document.setup ?? [];
  if (setup.length === 0) return;
  const commit = await headCommit(ctx.sandbox, ctx.signal);
  const key = await setupKey(ctx.sandbox, commit, setup, ctx.signal);
  const marker = await ctx.sandbox.exec(`cat ${workspaceSetupMarker}`, { signal: ctx.signal, timeoutMs: 60_000 });
  if (marker.exitCode === 0 && marker.stdout.trim() === key) {
    ctx.log.info({ key }, 'setup already ran in this workspace for these lockfiles and commands');
    // A workspace from a setup image that is still at its (newer) base, untouched: where the
    // repo's next sessions start. One the agent has worked in never is.
    if (ctx.knowledge && ctx.sandbox.checkpoint && commit === ctx.baseCommit && (await untouched(ctx))) {
      await ctx.sandbox.checkpoint({ template: { repo: ctx.knowledge.repo, commit } });
    }
    return;
  }
  const passed = await runSetupCommands(ctx, ctx.sandbox, commit, setup);
  await ctx.sandbox.exec("git ls-files --others --exclude-standard --directory | sed 's#^#/#' >> .git/info/exclude", {
    signal: ctx.signal,
    timeoutMs: 60_000,
  });
  if (passed)
    await ctx.sandbox.exec(`printf '%s\\n' ${key} > ${workspaceSetupMarker}`, {
      signal: ctx.signal,
      timeoutMs: 60_000,
    });
  // A remote sandbox saves its set-up filesystem, so a lost sandbox never costs the setup again; a
  // setup that passed on the untouched checkout also becomes where the repo's next sessions start.
  await ctx.sandbox.checkpoint?.(
    passed && ctx.knowledge ? { template: { repo: ctx.knowledge.repo, commit } } : undefined,
  );
}

/** No change in the workspace beside what setup left (which is excluded). */
async function untouched(ctx: GateContext): Promise<boolean> {
  const status = await ctx.sandbox.exec('git status --porcelain', { signal: ctx.signal, timeoutMs: 60_000 });
  return status.exitCode === 0 && status.stdout.trim() === '';
}

/** Runs setup commands in order until one fails; each is recorded. True when all passed. */
async function runSetupCommands(
  ctx: GateContext,
  where: Pick<Sandbox, 'exec'>,
  commit: string,
  setup: readonly KnownCommand[],
): Promise<boolean> {
  for (const command of setup) {
    const run = await runCheckCommand(where, {
      commit,
      phase: 'setup',
      command,
      timeoutMs: ctx.gates.checkTimeoutMs,
      signal: ctx.signal,
    });
    if (run.outcome !== 'passed') run.reason = setupFailureReason(run, await refusedHosts(ctx));
    await recordRun(ctx, run);
    ctx.log.info({ command: command.command, outcome: run.outcome, reason: run.reason }, 'setup command finished');
    if (run.outcome !== 'passed') return false;
  }
  return true;
}

/** Hosts the egress proxy refused for this session so far (from its `egress-blocked` events). */
async function refusedHosts(ctx: GateContext): Promise<string[]> {
  const events = await ctx.store.events(ctx.sessionId, { types: ['egress-blocked'] });
  return events.flatMap(({ event }) => (event.type === 'egress-blocked' ? [event.host] : []));
}

/**
 * Setup in the checkout of the judged commit: the output cached for its key when there is one, else
 * the setup commands, whose output is then kept for the next round. Why checks cannot run, if so.
 */
async function setupCheckout(ctx: GateContext, checkout: CommitCheckout): Promise<string | undefined> {
  const setup = ctx.knowledge?.document.setup ?? [];
  if (setup.length === 0) return undefined;
  const key = await setupKey(ctx.sandbox, checkout.commit, setup, ctx.signal);
  if (await checkout.restoreSetup(key)) {
    ctx.log.info({ key, commit: checkout.commit }, 'setup output reused for the checkout');
    return undefined;
  }
  const where = {
    exec: (command: string, options: ExecOptions) =>
      checkout.exec(command, { timeoutMs: ctx.gates.checkTimeoutMs, signal: ctx.signal, ...options }),
  };
  if (await runSetupCommands(ctx, where, checkout.commit, setup)) {
    await checkout.noteSetupOutput(key);
    return undefined;
  }
  const runs = await ctx.gates.checks.runs(ctx.sessionId, { commit: checkout.commit, phase: 'setup' });
  const failed = runs.findLast((r) => r.outcome !== 'passed');
  return failed ? (failed.reason ?? setupFailureReason(failed)) : 'setup failed';
}

/**
 * Runs every check on exactly `commit`, in a fresh checkout of it (after setup ran there), never in
 * the agent's tree: a file the agent left ignored or excluded is not in it, and a check that commits
 * or rewrites files changes nothing that is pushed.
 */
export async function runChecks(ctx: GateContext, commit: string): Promise<CheckRun[]> {
  const checks: KnownCommand[] = ctx.knowledge?.document.checks ?? [];
  if (checks.length === 0) return [];
  const runs: CheckRun[] = [];
  const before = await ctx.gates.checks.runs(ctx.sessionId, { commit, phase: 'check' });
  const checkout = await openCommitCheckout(ctx.sandbox, commit, ctx.signal);
  try {
    const blocker = await setupCheckout(ctx, checkout);
    for (const command of checks) {
      let run: CheckRun;
      if (blocker) {
        const now = new Date();
        run = {
          commit,
          phase: 'check',
          name: command.name,
          command: command.command,
          outcome: 'not-run',
          exitCode: null,
          durationMs: 0,
          logHead: '',
          logTail: '',
          reason: blocker,
          startedAt: now,
          finishedAt: now,
        };
      } else {
        run = await runCheckCommand(checkout, {
          commit,
          phase: 'check',
          command,
          timeoutMs: ctx.gates.checkTimeoutMs,
          signal: ctx.signal,
        });
        if (run.outcome === 'failed' && run.exitCode === 127)
          run = { ...run, outcome: 'not-run', reason: missingCommandReason(run) };
      }
      await recordRun(ctx, run);
      runs.push(run);
      const failedBefore = before.some(
        (r) => r.command === command.command && (r.outcome === 'failed' || r.outcome === 'timed-out'),
      );
      if (run.outcome === 'passed' && failedBefore && ctx.knowledge) {
        // Same commit, nothing changed, and now it passes: the check is flaky, worth knowing next time.
        await ctx.gates.knowledge.addLesson(
          ctx.knowledge.repo,
          `\`${command.command}\` failed and then passed on the same commit with nothing changed, so it is likely flaky: run it again before changing code for its failures.`,
        );
        ctx.log.info({ command: command.command, commit }, 'flaky check recorded as a lesson');
      }
    }
  } finally {
    await checkout.close();
  }
  return runs;
}

export type GateStep =
  /** A harness message went to the agent; run it again. */
  | { kind: 'run-again' }
  /** Publish with this decision; ask the thread when `question` is set. */
  | { kind: 'publish'; decision: GateDecision; question?: { text: string; choices: string[]; recommended: string } };

/**
 * The gates after the agent says it is done and its work is committed as `commit`: checks, then
 * the verifier, then the decision. Failing checks go back to the agent while the set of failures
 * changes; a failed verdict gets one rework; after that the humans decide.
 */
export async function gateCommit(
  ctx: GateContext,
  input: { commit: string; baseCommit: string; summary: string },
): Promise<GateStep> {
  const { commit } = input;
  const events = await ctx.store.events(ctx.sessionId);
  const since = lastHumanSeq(events);
  const recent = events.filter((e) => e.seq > since);

  const runs = await runChecks(ctx, commit);
  const failures = runs.filter((r) => r.outcome === 'failed' || r.outcome === 'timed-out');
  let stuck: string | undefined;
  if (failures.length > 0) {
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
    if (outside) stuck = `the agent says the failure is outside the task: ${outside}`;
    else if (again || earlier.has(signature)) stuck = 'the same checks failed again with nothing new';
    else if (rounds >= maxRounds)
      stuck = `the checks failed in ${rounds} rounds of fixes, the most a request gets before people decide`;
    else {
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
      return { kind: 'run-again' };
    }
  }

  const attempt = recent.filter((e) => e.event.type === 'verification-finished').length + 1;
  const diff = await ctx.sandbox.exec(verifierDiffCommand(input.baseCommit, commit), {
    signal: ctx.signal,
    timeoutMs: 60_000,
    maxOutputBytes: 256 * 1024,
  });
  const result = await verifyChange(ctx.gates.verifier, {
    task: taskText(events),
    knowledge: ctx.knowledgeText,
    checks: runs,
    diff: diff.stdout,
    signal: ctx.signal,
  });
  let verdict: Evidence['verdict'];
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
        ? [{ event: { type: 'usage' as const, turn: 0, model: ctx.gates.verifier.model, ...result.usage } }]
        : []),
    ],
    ...(result.usage && { usage: result.usage }),
  });

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
  if (stuck) {
    return {
      kind: 'publish',
      decision,
      question: {
        text: [
          `Checks still fail and I stopped: ${stuck}.`,
          '',
          ...failures.map((f) => `> \`${f.command}\` exit ${f.exitCode}`),
          '',
          'The pull request stays a draft. Keep it as a draft, try another approach, or stop?',
        ].join('\n'),
        choices: ['Keep it as a draft', 'Try another approach', 'Stop'],
        recommended: 'Keep it as a draft',
      },
    };
  }
  if (verdict.outcome === 'failed') {
    return {
      kind: 'publish',
      decision,
      question: {
        text: [
          `The reviewer did not pass the change after a rework (${verdict.total}/8), so the pull request stays a draft.`,
          '',
          quoteVerdict(verdict),
          '',
          'Keep it as a draft, try another approach, or stop?',
        ].join('\n'),
        choices: ['Keep it as a draft', 'Try another approach', 'Stop'],
        recommended: 'Keep it as a draft',
      },
    };
  }
  return { kind: 'publish', decision };
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
