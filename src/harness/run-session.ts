import type { Logger } from 'pino';
import type { Sandbox, SandboxProvider, SandboxSpec } from '../../sandbox/sandbox.ts';
import { commitIdentity, type Actor } from '../core/actor.ts';
import { describeError, isPatchbayError } from '../core/errors.ts';
import type { EventOf } from '../core/events.ts';
import type { LivePublisher } from '../core/live-events.ts';
import type { GitCredentials, PublishedPullRequest, Publisher } from '../core/publisher.ts';
import type { RunLog } from '../core/run-log.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { runAgent, type RunLimits, type RunOutcome, type ToolExecutor } from '../agent/agent-runner.ts';
import { systemPrompt } from '../agent/system-prompt.ts';
import { branchName } from '../git/branch-name.ts';
import { commitAll } from '../git/commit-all.ts';
import { prepareWorkspace } from '../git/prepare-workspace.ts';
import { pushBranch } from '../git/push-branch.ts';
import type { ModelProvider } from '../models/model-provider.ts';
import { createLiveText } from './live-text.ts';

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
  /** Called in order after a push (the GitHub integration opens or updates the pull request). */
  publishers?: readonly Publisher[];
};

/**
 * The blueprint around the agent: deterministic steps the harness owns, the agent in the middle.
 * prepare workspace → run agent → commit → push → record. Runs are resumable: every step checks
 * what the database already says before it acts.
 */
export async function runSession(sessionId: string, deps: HarnessDeps, signal: AbortSignal): Promise<void> {
  const { store, log: rootLog } = deps;
  const log = rootLog.child({ sessionId });
  const session = await store.get(sessionId);
  if (!session) {
    log.warn('run requested for a session that does not exist');
    return;
  }
  if (session.status !== 'queued' && session.status !== 'running') {
    log.info({ status: session.status }, 'nothing to run');
    return;
  }
  // 'running' with no live run means the last one was interrupted: its worker crashed or shut down.
  const interrupted = session.status === 'running';
  const resumed = 'the previous run was interrupted (its server stopped or crashed); resuming from the last recorded step';
  const started = await store.transition(sessionId, 'start', interrupted ? { events: [{ event: { type: 'run-resumed', reason: resumed } }] } : {});
  if (!started.applied) {
    // Stopped between the read above and the transition.
    log.info({ status: started.session.status }, 'nothing to run');
    return;
  }
  if (interrupted) log.info('run was interrupted and is resumed');

  let sandbox: Sandbox | undefined;
  try {
    // Inside the try: a sandbox that cannot be had is a failure with a reason, not a silent retry loop.
    sandbox = await deps.sandboxes.acquire(sessionId, { network: deps.network });
    const workspace = await ensureWorkspace(session, deps, signal);
    for (;;) {
      const liveText = deps.live && createLiveText(sessionId, deps.live);
      const outcome = await runAgent({
        sessionId,
        system: systemPrompt({ repo: session.repo, branch: workspace.branch, workdir: sandbox.workdir }),
        model: deps.model,
        tools: deps.tools,
        sandbox,
        runLog: store,
        signal,
        log,
        ...(deps.limits && { limits: deps.limits }),
        ...(liveText && { onDelta: liveText.onDelta }),
      }).finally(() => liveText?.flush());
      const next = await settle({ session, outcome, workspace, sandbox, deps, signal, log });
      if (next === 'done') break;
      log.info('messages arrived as the run ended; continuing with them');
    }
  } catch (error) {
    if (signal.aborted) {
      await noteAbort(sessionId, store, log);
      return;
    }
    log.error({ err: error }, 'session run failed');
    const code = isPatchbayError(error) ? error.code : 'internal';
    await store.transition(sessionId, 'fail', {
      reason: describeError(error),
      patch: { error: describeError(error) },
      events: [{ event: { type: 'error', code, message: describeError(error) } }],
    });
  } finally {
    await sandbox?.release().catch((error: unknown) => log.warn({ err: error }, 'sandbox release failed'));
  }
}

type Workspace = { branch: string; baseBranch: string; baseCommit: string; workspaceDir: string };

type SettleInput = {
  session: SessionRecord;
  outcome: RunOutcome;
  workspace: Workspace;
  sandbox: Sandbox;
  deps: HarnessDeps;
  signal: AbortSignal;
  log: Logger;
};

/** What the harness does after settling a run: stop, or run the agent again for messages it has not seen. */
export type AfterSettle = 'done' | 'run-again';

/**
 * Moves the session to where the run's outcome puts it; a finished run's changes are shipped
 * first. Says 'run-again' when messages arrived that the run has not seen. (A trigger that no
 * longer applies, say a stop came first, leaves the session as it is.)
 */
async function settle({ session, outcome, workspace, sandbox, deps, signal, log }: SettleInput): Promise<AfterSettle> {
  const { store } = deps;
  const unlessUnread = async (trigger: Parameters<RunLog['transition']>[1], options: Parameters<RunLog['transition']>[2]): Promise<AfterSettle> =>
    (await store.transition(session.id, trigger, { ...options, unlessUnread: true })).unread ? 'run-again' : 'done';
  switch (outcome.kind) {
    case 'waiting':
      return unlessUnread('ask', { reason: 'waiting for an answer' });
    case 'cancelled':
      await noteAbort(session.id, store, log);
      return 'done';
    case 'failed':
      return unlessUnread('fail', {
        reason: outcome.message,
        patch: { error: outcome.message },
        events: [{ event: { type: 'error', code: outcome.code, message: outcome.message } }],
      });
    case 'finished': {
      const shipped = await shipChanges(session, outcome.summary, workspace, sandbox, deps, signal, log);
      const result = {
        summary: outcome.summary,
        branch: workspace.branch,
        ...(shipped.commit && { commit: shipped.commit }),
        ...(shipped.prUrl && { prUrl: shipped.prUrl }),
      };
      return unlessUnread('finish', {
        reason: shipped.commit ? `pushed ${shipped.commit.slice(0, 12)} to ${workspace.branch}` : 'finished with no changes to commit',
        patch: { result, error: null },
      });
    }
    default: {
      const _never: never = outcome;
      return _never;
    }
  }
}

/**
 * A run ends 'cancelled' only because someone stopped the session, and the stop wrote that status
 * before the run was aborted. Aborted with any other status, the worker is shutting down or lost
 * its job to another worker: the status stays as it is (a message after a stop may have queued the
 * session again), and the queue's retry resumes the run from the database.
 */
async function noteAbort(sessionId: string, store: RunLog, log: Logger): Promise<void> {
  const status = (await store.get(sessionId))?.status;
  // Info, not a warning: a shutdown interrupts runs on purpose, and the queue resumes them.
  if (status !== 'cancelled') log.info({ status }, 'run interrupted without a stop; leaving the session for the queue to resume');
}

async function ensureWorkspace(session: SessionRecord, deps: HarnessDeps, signal: AbortSignal): Promise<Workspace> {
  const { store } = deps;
  const workspaceDir = deps.sandboxes.hostPath?.(session.id);
  if (!workspaceDir) throw new Error(`the ${deps.sandboxes.kind} sandbox has no host workspace for the harness's git work`);
  const branch = session.branch ?? branchName(session.id, session.title);
  const env = await gitEnvFor(session.repo, deps, signal);
  const prepared = await prepareWorkspace({
    ...(env && { env }),
    repo: session.repo,
    ...(session.baseBranch && { baseBranch: session.baseBranch }),
    branch,
    workspaceDir,
    dataDir: deps.dataDir,
    log: deps.log.child({ sessionId: session.id }),
    signal,
  });
  await store.commitStep(session.id, {
    patch: { branch, baseBranch: prepared.baseBranch },
    events: [
      {
        event: { type: 'workspace-ready', branch, baseBranch: prepared.baseBranch, baseCommit: prepared.baseCommit },
        dedupeKey: 'workspace-ready',
      },
    ],
  });
  return { branch, baseBranch: prepared.baseBranch, baseCommit: prepared.baseCommit, workspaceDir };
}

/**
 * Ships what the agent changed: commits it with the requester as author, pushes the session branch
 * and hands the push to the publishers (which open or update the pull request).
 */
async function shipChanges(
  session: SessionRecord,
  summary: string,
  workspace: Workspace,
  sandbox: Sandbox,
  deps: HarnessDeps,
  signal: AbortSignal,
  log: Logger,
): Promise<{ commit?: string; prUrl?: string }> {
  const { store } = deps;
  const messages = (await store.events(session.id, { types: ['user-message'] })).map((e) => e.event as EventOf<'user-message'>);
  const coAuthors = uniqueActors(messages.map((m) => m.actor)).filter((a) => a.id !== session.requester.id || a.source !== session.requester.source);
  const committed = await commitAll(sandbox, {
    message: commitMessage(session, summary, deps.publicUrl),
    author: commitIdentity(session.requester),
    coAuthors: coAuthors.map(commitIdentity),
    branch: workspace.branch,
    signal,
  });
  const stat = await sandbox.exec(`git diff --stat ${workspace.baseCommit} HEAD`, { signal, timeoutMs: 60_000 });
  const filesChanged = Number(/(\d+) files? changed/.exec(stat.stdout)?.[1] ?? 0);
  if (filesChanged === 0 && !committed.commit) return {};
  const env = await gitEnvFor(session.repo, deps, signal);
  const pushed = await pushBranch({
    ...(env && { env }),
    sandbox,
    workspaceDir: workspace.workspaceDir,
    repo: session.repo,
    branch: workspace.branch,
    // The rule, on every push: only the session's own branch; never its base or a protected one.
    baseBranch: workspace.baseBranch,
    protectedBranches: deps.protectedBranches ?? [],
    dataDir: deps.dataDir,
    log,
    signal,
  });
  await store.commitStep(session.id, {
    events: [
      { event: { type: 'diff-updated', stat: stat.stdout.trim(), filesChanged }, dedupeKey: `diff:${pushed.commit}` },
      { event: { type: 'branch-pushed', branch: workspace.branch, commit: pushed.commit, remote: pushed.remote }, dedupeKey: `pushed:${pushed.commit}` },
    ],
  });
  const current = (await store.get(session.id)) ?? session;
  let pr: PublishedPullRequest | undefined;
  for (const publisher of deps.publishers ?? []) {
    const published = await publisher.publish({ session: current, branch: workspace.branch, baseBranch: workspace.baseBranch, commit: pushed.commit, summary, signal });
    pr ??= published;
  }
  if (pr) {
    await store.commitStep(session.id, {
      events: [{ event: { type: 'pr-opened', url: pr.url, number: pr.number, branch: workspace.branch, commit: pushed.commit }, dedupeKey: `pr:${pushed.commit}` }],
    });
  }
  return { commit: pushed.commit, ...(pr && { prUrl: pr.url }) };
}

/** The git environment of the first credentials provider that has one for this repository. */
async function gitEnvFor(repo: string, deps: HarnessDeps, signal: AbortSignal): Promise<Record<string, string> | undefined> {
  for (const credentials of deps.gitCredentials ?? []) {
    const env = await credentials.gitEnv(repo, signal);
    if (env) return env;
  }
  return undefined;
}

function commitMessage(session: SessionRecord, summary: string, publicUrl?: string): string {
  const body = summary.trim().slice(0, 4000);
  const link = publicUrl ? `\n\nPatchbay session: ${publicUrl.replace(/\/$/, '')}/sessions/${session.id}` : `\n\nPatchbay session ${session.id}`;
  return `${session.title}\n\n${body || 'Changes made by Patchbay.'}${link}`;
}

function uniqueActors(actors: Actor[]): Actor[] {
  const seen = new Map<string, Actor>();
  for (const actor of actors) seen.set(`${actor.source}:${actor.id}`, actor);
  return [...seen.values()];
}
