import type { ExecOptions, Sandbox } from '../../../sandbox/sandbox.ts';
import type { CheckRun } from '../checks/check-store.ts';
import type { EvidenceRepo } from '../../git/evidence-repo.ts';
import {
  openCommitCheckout,
  setupInputsListing,
  setupKeyOf,
  shellQuote,
  workspaceSetupMarker,
  type CommitCheckout,
} from '../checks/commit-checkout.ts';
import { describeError, isPatchbayError, PatchbayError } from '../../core/errors.ts';
import { missingCommandReason, runCheckCommand, setupFailureReason } from '../checks/run-checks.ts';
import type { KnownCommand } from '../knowledge/knowledge-document.ts';
import { unattendedRefusal } from './unattended-command.ts';
import type { GateContext } from './gate-deps.ts';

/**
 * Where the gate reads the files a command would run (package.json scripts and the like) to judge
 * it: the sandbox the command runs in, the checks' own for checks and their setup.
 */
type CommandFiles = Pick<Sandbox, 'readFile' | 'workdir'>;

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

/** The setup key of the agent's own workspace (its marker is the agent's to write anyway). */
async function workspaceSetupKey(ctx: GateContext, commit: string, setup: readonly KnownCommand[]): Promise<string> {
  const listed = await ctx.sandbox.exec(`git ${setupInputsListing(commit).map(shellQuote).join(' ')}`, {
    signal: ctx.signal,
    timeoutMs: 60_000,
  });
  if (listed.exitCode !== 0)
    throw new PatchbayError(
      'git_failed',
      `could not list the setup inputs of ${commit.slice(0, 12)}: ${listed.stderr.trim().slice(0, 500)}`,
    );
  return setupKeyOf(listed.stdout, setup);
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
  const key = await workspaceSetupKey(ctx, commit, setup);
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
  const passed = await runSetupCommands(
    ctx,
    { exec: (c, o) => ctx.sandbox.exec(c, o), dir: '.', files: ctx.sandbox },
    commit,
    setup,
  );
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
  where: Pick<Sandbox, 'exec'> & { dir: string; files: CommandFiles },
  commit: string,
  setup: readonly KnownCommand[],
): Promise<boolean> {
  for (const command of setup) {
    const refusal = await unattendedRefusal(
      command.command,
      { sandbox: where.files, dir: where.dir },
      ctx.approvalRules ?? [],
    );
    const run = refusal
      ? notRun(commit, 'setup', command, `setup \`${command.command}\` ${refusal}`)
      : await runCheckCommand(where, {
          commit,
          phase: 'setup',
          command,
          timeoutMs: ctx.gates.checkTimeoutMs,
          signal: ctx.signal,
        });
    if (run.outcome !== 'passed') run.reason ??= setupFailureReason(run, await refusedHosts(ctx));
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
async function setupCheckout(
  ctx: GateContext,
  checkout: CommitCheckout,
  key: string | undefined,
  files: CommandFiles,
): Promise<string | undefined> {
  const setup = ctx.knowledge?.document.setup ?? [];
  if (setup.length === 0 || key === undefined) return undefined;
  if (await checkout.restoreSetup(key)) {
    ctx.log.info({ key, commit: checkout.commit }, 'setup output reused for the checkout');
    return undefined;
  }
  const where = {
    dir: checkout.dir,
    files,
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
 * Runs every check on exactly the judged commit, in a fresh checkout of it made from the host's
 * evidence repository in a sandbox of the checks' own (after setup ran there), never in the agent's
 * workspace: nothing the agent wrote outside the commit (ignored or excluded files, its `.git`, its
 * node_modules) is in it or above it, and a check that commits or rewrites files changes nothing
 * that is pushed.
 */
export async function runChecks(ctx: GateContext, evidence: EvidenceRepo): Promise<CheckRun[]> {
  const { commit } = evidence;
  const checks: KnownCommand[] = ctx.knowledge?.document.checks ?? [];
  if (checks.length === 0) return [];
  const runs: CheckRun[] = [];
  const before = await ctx.gates.checks.runs(ctx.sessionId, { commit, phase: 'check' });
  const setup = ctx.knowledge?.document.setup ?? [];
  // The key comes from the evidence repository: the agent's git could name any blob it likes.
  const key = setup.length ? setupKeyOf(await evidence.git(setupInputsListing(commit), ctx.signal), setup) : undefined;
  let sandbox: Sandbox;
  try {
    sandbox = await ctx.evidence.checkSandbox();
  } catch (error) {
    // Taken over (another run owns the session) or stopping: this run says nothing more.
    if (ctx.signal.aborted || isPatchbayError(error, 'lease_lost')) throw error;
    return recordUnchecked(ctx, commit, checks, error);
  }
  try {
    const checkout = await openCommitCheckout({
      sandbox,
      evidence,
      sharedObjects: ctx.evidence.sharedObjects,
      key,
      digests: ctx.evidence.setupDigests,
      signal: ctx.signal,
    });
    try {
      const blocker = await setupCheckout(ctx, checkout, key, sandbox);
      await checkEach(ctx, { checkout, files: sandbox, checks, before, runs, blocker });
    } finally {
      await checkout.close();
    }
  } finally {
    await sandbox.release();
  }
  return runs;
}

/**
 * The checks' sandbox could not be started: every check is recorded as not run, with why, so the
 * gate fails closed (no ready PR) and the thread hears the reason, instead of the run ending in an
 * error or waiting on a sandbox that never comes.
 */
async function recordUnchecked(
  ctx: GateContext,
  commit: string,
  checks: readonly KnownCommand[],
  error: unknown,
): Promise<CheckRun[]> {
  ctx.log.warn({ err: error, commit }, "the checks' sandbox could not be started; no check ran");
  const reason = `the checks' sandbox could not be started (${describeError(error)}), so nothing was checked`;
  const runs = checks.map((command) => notRun(commit, 'check', command, reason));
  for (const run of runs) await recordRun(ctx, run);
  return runs;
}

/** Runs each check in the checkout (or records it not run, with the blocker or the gate's refusal), noting a flaky one. */
async function checkEach(
  ctx: GateContext,
  round: {
    checkout: CommitCheckout;
    files: CommandFiles;
    checks: readonly KnownCommand[];
    before: readonly CheckRun[];
    runs: CheckRun[];
    blocker: string | undefined;
  },
): Promise<void> {
  const { checkout, before, runs, blocker } = round;
  const { commit } = checkout;
  for (const command of round.checks) {
    const refusal = blocker
      ? undefined
      : await unattendedRefusal(command.command, { sandbox: round.files, dir: checkout.dir }, ctx.approvalRules ?? []);
    let run: CheckRun;
    if (blocker) run = notRun(commit, 'check', command, blocker);
    else if (refusal) run = notRun(commit, 'check', command, `check \`${command.command}\` ${refusal}`);
    else {
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
}

/** A setup or check command the harness did not run, and why (the gate refused it). */
function notRun(commit: string, phase: CheckRun['phase'], command: KnownCommand, reason: string): CheckRun {
  const now = new Date();
  return {
    commit,
    phase,
    name: command.name,
    command: command.command,
    outcome: 'not-run',
    exitCode: null,
    durationMs: 0,
    logHead: '',
    logTail: '',
    reason,
    startedAt: now,
    finishedAt: now,
  };
}
