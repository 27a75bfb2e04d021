import type { PictureFitter } from '../core/image-format.ts';
import type { ArtifactStore } from '../core/artifact-store.ts';
import type { Sandbox, SandboxProvider, SandboxSpec } from '../../sandbox/sandbox.ts';
import type { Logger } from 'pino';
import { commitIdentity } from '../core/actor.ts';
import { describeGate, publishedGate } from '../core/evidence.ts';
import type { LivePublisher } from '../core/live-events.ts';
import type { GitCredentials, Publisher } from '../core/publisher.ts';
import type { RepoAccess } from '../core/repo-access.ts';
import type { RunLog } from '../core/run-log.ts';
import {
  defaultRunLimits,
  runAgent,
  type RunLimits,
  type RunOutcome,
  type ToolExecutor,
} from '../agent/agent-runner.ts';
import type { ApprovalRules } from '../core/approval-rules.ts';
import type { Autonomy } from '../core/autonomy.ts';
import type { ModelProvider } from '../models/model-provider.ts';
import type { CheckpointStore } from './checkpoint/checkpoint-store.ts';
import { systemPrompt } from '../agent/system-prompt.ts';
import { commitAll } from '../git/commit-all.ts';
import { runSetup } from './gates/gate-checks.ts';
import type { GateContext, GateDeps } from './gates/gate-deps.ts';
import { gateCommit } from './gates/run-gates.ts';
import type { SessionRun } from './session-run.ts';
import { answerHarnessQuestion, askAboutGate } from './harness-question.ts';
import { createLiveText } from './live-text.ts';
import type { Route } from './route-task.ts';
import { endRun, failRun, noteAbort, startRun } from './run-lifecycle.ts';
import { coAuthorsOf, commitMessage, type Committed } from './ship-changes.ts';
import { pushAndPublish } from './push-and-publish.ts';
import { signOffRequired } from './knowledge/scout-passes.ts';
import { answerPlan, askForGo, planApproved } from './plan-first.ts';
import { closeRepliedPush, holdPush } from './push-approval.ts';
import {
  type ApprovalSettings,
  approvalsFor,
  lockedUntilGo,
  type RunAutonomy,
  settleAutonomy,
} from './session-autonomy.ts';
import { budgetLimits, pauseForBudget, runBudget } from './session-budget.ts';
import { pauseForModel } from './model-pause.ts';
import { type EngineDeps, runEngineRound } from './engine-round.ts';
import { chooseEngine } from '../engines/engine-choice.ts';
import type { EngineName } from '../engines/engine.ts';
import { loadSessionKnowledge, warnUnknownPrices } from './session-knowledge.ts';
import { routeSession } from './session-route.ts';
import { answerOnly, finishAnswer, type RoundTools, roundGuidance, settleMode } from './answer-mode.ts';
import type { SessionMode } from '../core/session-mode.ts';
import { subtaskSpawner, type SubtaskDeps } from './session-subtasks.ts';
import { authorizeSessionRepo } from './repo-authorization.ts';
import { recordScreenshots, screenshotsSection, takeSessionScreenshots } from './screenshots/session-screenshots.ts';
import {
  acquireSandbox,
  ensureWorkspace,
  evidenceSource,
  noteRestored,
  resumeCheckpoints,
} from './session-workspace.ts';

/** What a session run is given: its stores, sandboxes, model and tools, and the optional gates and checkpoints. */
export type HarnessDeps = {
  /** Where the session is read and every step of its run is written (the session store). */
  store: RunLog;
  sandboxes: SandboxProvider;
  model: ModelProvider;
  tools: ToolExecutor;
  dataDir: string;
  network: SandboxSpec['network'];
  log: Logger;
  limits?: Partial<RunLimits>;
  /** Where the model's text goes as it streams (the event bus), for people watching the session. */
  live?: LivePublisher;
  /** Branches no push may target, on top of main, master, the session's base and the default branch. */
  protectedBranches?: string[];
  /** Base URL of the web page, for links in commit messages. */
  publicUrl?: string;
  /** Credentials for the host's network git calls, asked in order; the first that has some for a repo wins. */
  gitCredentials?: readonly GitCredentials[];
  /** Asked in order whether the requester may have work done on a repository, before its clone or sub-task. */
  repoAccess?: readonly RepoAccess[];
  /** Called in order after a push (the GitHub integration opens or updates the pull request). */
  publishers?: readonly Publisher[];
  /** Repo knowledge, setup, checks, verifier and budgets. Without it a finished run is pushed unchecked. */
  gates?: GateDeps;
  /**
   * Where the work is checkpointed after every file-changing step, so another worker can resume it.
   * Without it, a run resumed on a workspace that lacks the work goes on without it.
   */
  checkpoints?: { store: CheckpointStore; maxBytes: number };
  /**
   * The session's pictures: those attached to people's messages are read for the model, and
   * before/after screenshots of a UI change are kept here (their signed links go in the PR body).
   */
  artifacts?: ArtifactStore;
  /** Scales a stored picture that breaks a request's size rules (agent-runner's `pictures`). */
  pictures?: PictureFitter;
  artifactUrl?: (id: string) => string;
  /** The run's lease epoch: the sandbox is acquired (and recorded, on Modal) under it. */
  runEpoch?: number;
  /**
   * The installation's autonomy (AUTONOMY; a repository's document and the requester's words come
   * first), its rules for risky commands (APPROVAL_RULES, under the repository's) and how long a
   * request waits. Without it nothing waits for a person and the command policy's plain refusals apply.
   */
  approvals?: ApprovalSettings;
  /** Where spawn_subtasks creates child sessions; without it the tool says it is not available. */
  subtasks?: SubtaskDeps;
  /** The engines besides Patchbay's own loop, and their relay; without it every session runs Patchbay's loop. */
  engines?: EngineDeps;
};

/**
 * The blueprint around the agent: deterministic steps the harness owns, the agent in the middle.
 * prepare workspace → run agent → commit → push → record. Runs are resumable: every step checks
 * what the database already says before it acts.
 */
export async function runSession(sessionId: string, deps: HarnessDeps, signal: AbortSignal): Promise<void> {
  const { store } = deps;
  const log = deps.log.child({ sessionId });
  const session = await startRun(sessionId, store, log);
  if (!session) return;
  let sandbox: Sandbox | undefined;
  try {
    // Before the sandbox, the mirror and the clone; the failure tells the thread why.
    await authorizeSessionRepo(session, deps, signal);
    // Inside the try: a sandbox that cannot be had is a failure with a reason, not a silent retry loop.
    sandbox = await acquireSandbox(session, deps);
    const prepared = await ensureWorkspace(session, deps, sandbox, signal);
    if (sandbox.restoredNote) await noteRestored(sessionId, sandbox.restoredNote, store, log);
    const { workspace, checkpoints } = await resumeCheckpoints(session, prepared, deps, sandbox, signal, log);
    if (await answerHarnessQuestion(sessionId, store, log)) return;
    await answerPlan(store, sessionId);
    await closeRepliedPush(store, sessionId);
    const run: SessionRun = { session, deps, sandbox, workspace, checkpoints, signal, log };
    // A question is answered read-only (no setup, no commit, no push); "fix it" makes it a task.
    let mode = await settleMode(store, session);
    const ready = await prepareGates(run, mode);
    const autonomy = await settleAutonomy(store, sessionId, {
      repository: ready.repositoryAutonomy,
      installation: deps.approvals,
    });
    const gates: RunGates = { ...ready, autonomy };
    // One time budget for every round of this run (agent, checks, rework), not one per round.
    const startedAt = Date.now();
    for (;;) {
      mode = await settleMode(store, session);
      if (mode === 'do' && ready.setupSkipped && ready.gate) {
        await runSetup(ready.gate);
        ready.setupSkipped = false;
      }
      const limits = await budgetLimits(sessionId, deps, gates.route, startedAt);
      // Plan-first: until a person's go, the agent only reads, and its finished turn is the plan.
      const locked = mode === 'do' && autonomy.level === 'plan-first' && !(await planApproved(store, sessionId));
      const outcome = await runAgentRound(run, gates, limits, mode === 'ask' ? 'answer' : locked ? 'plan' : 'free');
      const after =
        outcome.kind !== 'finished'
          ? await settle(run, outcome, gates, limits.timeLimitMinutes)
          : mode === 'ask'
            ? nextAfter(await finishAnswer(store, { ...run, baseCommit: workspace.baseCommit }, outcome.summary))
            : locked
              ? nextAfter(await askForGo(store, session, outcome.summary))
              : await settle(run, outcome, gates, limits.timeLimitMinutes);
      if (after === 'done') break;
      log.info('running the agent again: messages arrived as the run ended, or the gate asked for rework');
    }
  } catch (error) {
    await failRun(sessionId, error, store, signal, log);
  } finally {
    await endRun(session, sandbox, deps, signal, log);
  }
}

/** One round of the agent in the session's workspace, its text streamed to people watching. */
async function runAgentRound(
  run: SessionRun,
  gates: RunGates,
  limits: Partial<RunLimits>,
  toolsMay: RoundTools,
): Promise<RunOutcome> {
  const { session, deps, sandbox, workspace, checkpoints, signal, log } = run;
  const { level } = gates.autonomy;
  const system = [...gates.system, ...roundGuidance(level, toolsMay, workspace.baseCommit)];
  const liveText = deps.live && createLiveText(session.id, deps.live);
  const approvals = approvalsFor(level, deps.approvals, gates.approvalRules);
  const tools = checkpoints ? checkpoints.tools(deps.tools) : deps.tools;
  const fullSystem = [
    systemPrompt({ repo: session.repo, branch: workspace.branch, workdir: sandbox.workdir }),
    ...system,
  ].join('\n\n');
  const { engine } = chooseEngine(session.prompt, gates.repositoryEngine, deps.engines?.default ?? 'patchbay');
  // An engine's tools cannot be narrowed to reading: answers and plans run on Patchbay's own loop.
  if (engine !== 'patchbay' && deps.engines && toolsMay === 'free')
    return runEngineRound(run, deps.engines, engine, {
      system: fullSystem,
      limits: { ...deps.limits, ...limits },
      approvals,
      approvalTimeoutMs: deps.approvals?.timeoutMs ?? defaultRunLimits.approvalTimeoutMs,
      ...(liveText && { onDelta: liveText.onDelta }),
    }).finally(() => liveText?.flush());
  return runAgent({
    ...(approvals && { approvals }),
    sessionId: session.id,
    system: fullSystem,
    model: deps.model,
    tools: toolsMay === 'answer' ? answerOnly(tools) : toolsMay === 'plan' ? lockedUntilGo(tools) : tools,
    sandbox,
    runLog: deps.store,
    artifacts: deps.artifacts,
    pictures: deps.pictures,
    signal,
    log,
    subtasks: subtaskSpawner(run),
    limits: { ...deps.limits, ...limits, ...(deps.approvals && { approvalTimeoutMs: deps.approvals.timeoutMs }) },
    ...(liveText && { onDelta: liveText.onDelta }),
  }).finally(() => liveText?.flush());
}

/** After settling: stop here, or run the agent again in this run. */
type AfterSettle = 'done' | 'run-again';
/** 'run-again' when messages arrived that the run has not seen (the transition waited for them). */
const nextAfter = (transition: { unread?: boolean }): AfterSettle => (transition.unread ? 'run-again' : 'done');

/**
 * Moves the session to where the run's outcome puts it; a finished run is committed and pushed
 * first. Says 'run-again' when messages arrived that the run has not seen, or when the gate asks for
 * another round (rework); 'done' otherwise. (A trigger that no longer applies, say a stop came
 * first, leaves the session as it is.) `timeLimitMinutes` is the whole run's time budget, which
 * the runner's own figures are the rest of.
 */
async function settle(
  run: SessionRun,
  outcome: RunOutcome,
  gates: RunGates,
  timeLimitMinutes: number | undefined,
): Promise<AfterSettle> {
  const { session, deps, log } = run;
  const { store } = deps;
  switch (outcome.kind) {
    case 'waiting':
      return nextAfter(
        await store.transition(session.id, 'ask', { reason: 'waiting for an answer', unlessUnread: true }),
      );
    case 'subtasks':
      // Messages that come meanwhile wait for the parent's next turn, after its sub-tasks.
      await store.transition(session.id, 'ask', {
        reason: 'waiting for its sub-tasks',
        patch: { pendingQuestion: null },
      });
      return 'done';
    case 'cancelled':
      await noteAbort(session.id, store, log);
      return 'done';
    case 'failed':
      if (outcome.budget && deps.gates)
        return nextAfter(await pauseForBudget(session.id, runBudget(outcome.budget, timeLimitMinutes), store));
      if (outcome.modelDown) return nextAfter(await pauseForModel(session.id, outcome.message, store));
      return nextAfter(
        await store.transition(session.id, 'fail', {
          reason: outcome.message,
          patch: { error: outcome.message },
          events: [{ event: { type: 'error', code: outcome.code, message: outcome.message } }],
          unlessUnread: true,
        }),
      );
    case 'finished':
      return settleFinished(run, outcome.summary, gates);
    default: {
      const _never: never = outcome;
      return _never;
    }
  }
}

/**
 * A finished agent: its work committed, gated, pushed and published; the session finishes or asks.
 * Under ask-before-push a person approves the push of the request's work first (holdPush).
 */
async function settleFinished(run: SessionRun, summary: string, gates: RunGates): Promise<AfterSettle> {
  const { session, deps, workspace, checkpoints, signal } = run;
  const { gate } = gates;
  const committed = await commitWork(run, summary);
  // The commit moved HEAD: a resume elsewhere must push this commit, not make another.
  await checkpoints?.take(signal);
  if (gates.autonomy.level === 'ask-before-push' && committed.changed) {
    const timeoutMs = deps.approvals?.timeoutMs ?? defaultRunLimits.approvalTimeoutMs;
    const hold = await holdPush(deps.store, { sessionId: session.id, branch: workspace.branch, committed, timeoutMs });
    if (hold.kind === 'stop') return nextAfter(hold.transition);
  }
  const shots = committed.changed ? await takeSessionScreenshots(run, committed.head) : undefined;
  const images = shots?.images ?? [];
  const step =
    gate && committed.changed
      ? await gateCommit(gate, { commit: committed.head, baseCommit: workspace.baseCommit, summary, images })
      : undefined;
  if (step?.kind === 'run-again') return 'run-again';
  // The PR body shows the pictures through signed links; the thread's summary stays the agent's.
  const section = shots && deps.artifactUrl ? screenshotsSection(shots.event, deps.artifactUrl) : '';
  const published = section ? `${summary.trim()}\n\n${section}` : summary;
  const delivered = committed.changed ? await pushAndPublish(run, published, committed, step?.decision) : { notes: [] };
  if (shots && delivered.commit) await recordScreenshots(run, shots.event);
  // What the thread is told is what was published, for the commit that was pushed.
  const decision = delivered.decision ?? step?.decision;
  const result = {
    // What the thread must know of the publishing (no PR opened and why, a CLA to sign) ends the summary.
    summary: [summary, ...delivered.notes].join('\n\n'),
    branch: workspace.branch,
    ...(delivered.commit && { commit: delivered.commit }),
    ...(delivered.prUrl && { prUrl: delivered.prUrl }),
  };
  if (step?.question) {
    const questionId = `gate:${delivered.commit ?? committed.head}`;
    return nextAfter(await askAboutGate(deps.store, session.id, { questionId, question: step.question, result }));
  }
  return nextAfter(
    await deps.store.transition(session.id, 'finish', {
      reason: delivered.commit
        ? `pushed ${delivered.commit.slice(0, 12)} to ${workspace.branch}${decision ? `; ${describeGate(publishedGate(decision, delivered.prUrl !== undefined))}` : ''}`
        : 'finished with no changes to commit',
      patch: { result, error: null },
      unlessUnread: true,
    }),
  );
}

/** Commits what the agent changed with the requester as author (inside the sandbox). */
async function commitWork(run: SessionRun, summary: string): Promise<Committed> {
  const { session, deps, sandbox, workspace, signal } = run;
  const coAuthors = await coAuthorsOf(session, deps.store);
  const committed = await commitAll(sandbox, {
    message: commitMessage(session, summary, deps.publicUrl),
    author: commitIdentity(session.requester),
    coAuthors: coAuthors.map(commitIdentity),
    signOff: await signOffRequired(deps.gates, session.repo),
    branch: workspace.branch,
    signal,
  });
  const stat = await sandbox.exec(`git diff --stat ${workspace.baseCommit} HEAD`, { signal, timeoutMs: 60_000 });
  const filesChanged = Number(/(\d+) files? changed/.exec(stat.stdout)?.[1] ?? 0);
  const head = (await sandbox.exec('git rev-parse --verify HEAD', { signal, timeoutMs: 60_000 })).stdout.trim();
  return { changed: filesChanged > 0 || committed.commit !== undefined, head, stat: stat.stdout.trim(), filesChanged };
}

/** What the gates give the agent's rounds: system blocks, the route, the gate, and the repository's approval rules and autonomy. */
type PreparedGates = {
  system: string[];
  /** Setup was not run (a question is answered without it); a run that turns into a task runs it first. */
  setupSkipped?: boolean;
  route?: Route;
  gate?: GateContext;
  approvalRules?: ApprovalRules;
  repositoryAutonomy?: Autonomy;
  repositoryEngine?: EngineName;
};

/** The gates with the autonomy the run works under. */
type RunGates = PreparedGates & { autonomy: RunAutonomy };

/**
 * Before the agent: the repo's knowledge document (built or reused), setup once per workspace, and
 * the task's class, which sets the budgets and, for unclear or architecture-level work, asks for a
 * question or a plan first.
 */
async function prepareGates(run: SessionRun, mode: SessionMode): Promise<PreparedGates> {
  const { session, deps, sandbox, workspace, signal, log } = run;
  const { gates, store } = deps;
  if (!gates) return { system: [] };
  warnUnknownPrices([deps.model, gates.verifier], log);
  const { knowledge, knowledgeText, verifierKnowledge } = await loadSessionKnowledge(session, gates, deps, signal, log);
  const gate: GateContext = {
    sessionId: session.id,
    store,
    gates,
    sandbox,
    knowledge,
    knowledgeText: verifierKnowledge,
    approvalRules: [deps.approvals?.rules ?? {}, knowledge?.document.approvals ?? {}],
    baseCommit: workspace.baseCommit,
    evidence: evidenceSource(run),
    log,
    signal,
  };
  if (mode === 'do') await runSetup(gate);
  const { route, guidance } = await routeSession(session, gates, store);
  return {
    ...(mode === 'ask' && { setupSkipped: true }),
    // The route's guidance (a plan or a question first) is for changes; an answer needs neither.
    system: [...(mode === 'do' ? guidance : []), ...(knowledgeText ? [knowledgeText] : [])],
    route,
    gate,
    ...(knowledge?.document.approvals && { approvalRules: knowledge.document.approvals }),
    ...(knowledge?.document.autonomy && { repositoryAutonomy: knowledge.document.autonomy }),
    ...(knowledge?.document.engine && { repositoryEngine: knowledge.document.engine }),
  };
}
