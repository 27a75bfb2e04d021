import type { Logger } from 'pino';
import { join } from 'node:path';
import { SHARED_OBJECTS_PATH, type Sandbox } from '../../sandbox/sandbox.ts';
import type { RunLog } from '../core/run-log.ts';
import { checksSandboxId } from '../core/checks-sandbox.ts';
import type { SessionRecord } from '../core/session-record.ts';
import { mirrorPath, resolveRepo } from '../git/mirror.ts';
import { resumeWork, type SessionCheckpoints } from './checkpoint/session-checkpoints.ts';
import type { EvidenceSource } from './gates/gate-deps.ts';
import type { HarnessDeps } from './run-session.ts';
import { firstGitEnv } from '../core/publisher.ts';
import { prepareWorkspace } from '../git/prepare-workspace.ts';
import { prepareRemoteWorkspace } from '../git/prepare-remote-workspace.ts';
import { sessionBranch } from './knowledge/scout-passes.ts';
import type { SessionRun, Workspace } from './session-run.ts';
import { knowledgeKey } from './knowledge/load-knowledge.ts';

/**
 * The session's sandbox. Where the provider can show it, the mirror's object store is the
 * workspace's history (a shared clone): a session on a mirrored repository writes only its checkout.
 */
export function acquireSandbox(session: SessionRecord, deps: HarnessDeps): Promise<Sandbox> {
  const sharedObjects =
    deps.sandboxes.sharesObjects && deps.sandboxes.hostPath
      ? join(mirrorPath(deps.dataDir, resolveRepo(session.repo)), 'objects')
      : undefined;
  return deps.sandboxes.acquire(session.id, {
    network: deps.network,
    repo: knowledgeKey(session.repo),
    ...(sharedObjects && { sharedObjects }),
    ...(deps.runEpoch !== undefined && { epoch: deps.runEpoch }),
  });
}

/**
 * Brings back the work of earlier runs from their checkpoints (when the harness keeps them) and
 * keeps checkpointing; the workspace's base is then the checkpoint's.
 */
export async function resumeCheckpoints(
  session: SessionRecord,
  prepared: Workspace,
  deps: HarnessDeps,
  sandbox: Sandbox,
  signal: AbortSignal,
  log: Logger,
): Promise<{ workspace: Workspace; checkpoints: SessionCheckpoints | undefined }> {
  if (!deps.checkpoints) return { workspace: prepared, checkpoints: undefined };
  const checkpoints = await resumeWork({
    sessionId: session.id,
    sandbox,
    ...(prepared.workspaceDir && { workspaceDir: prepared.workspaceDir }),
    reused: prepared.reused,
    base: prepared,
    deps: {
      store: deps.checkpoints.store,
      runLog: deps.store,
      dataDir: deps.dataDir,
      maxBytes: deps.checkpoints.maxBytes,
      log,
    },
    signal,
  });
  return { workspace: { ...prepared, ...checkpoints.base }, checkpoints };
}

/**
 * The sandbox was lost and its workspace restored from an older snapshot: the transcript may say
 * work was done that the workspace no longer has, so the agent is told before it goes on, and the
 * thread sees why the run resumed.
 */
export async function noteRestored(sessionId: string, note: string, store: RunLog, log: Logger): Promise<void> {
  log.warn({ note }, 'workspace restored from an older snapshot');
  await store.commitStep(sessionId, {
    messages: [{ message: { role: 'user', content: `Patchbay: ${note}` } }],
    events: [{ event: { type: 'run-resumed', reason: note } }],
  });
}

/**
 * A git command killed mid-way (the server killed, or a run interrupted at shutdown or by a stop)
 * leaves its lock file, and every later `git commit` in the workspace fails with "index.lock: File
 * exists": the resumed run failed with its work unpushed. A session has one run at a time, so at the
 * start of a run no git process of its own holds a lock: remove them. Inside the sandbox, since the
 * workspace is the sandbox's to shape (the host never follows paths in it).
 */
export async function clearStaleGitLocks(sandbox: Sandbox, log: Logger, signal: AbortSignal): Promise<void> {
  const found = await sandbox.exec("find .git -type f -name '*.lock' -not -path '.git/objects/*' -print -delete", {
    signal,
    timeoutMs: 60_000,
  });
  if (found.exitCode !== 0)
    log.warn(
      { exitCode: found.exitCode, stderr: found.stderr.slice(0, 500) },
      'could not look for git lock files left in the workspace',
    );
  const removed = found.stdout.split('\n').filter(Boolean);
  if (removed.length > 0) log.info({ removed }, 'removed git lock files an interrupted run left in the workspace');
}

/**
 * Where the gate takes a commit's evidence from: the agent's workspace hands over objects only, and
 * the checks get a sandbox of their own (`<sessionId>-checks`: its own workspace, the same network
 * rules and the mirror's objects read-only), which never mounts the agent's workspace.
 */
export function evidenceSource(run: SessionRun): EvidenceSource {
  const { session, deps, workspace } = run;
  const checksId = checksSandboxId(session.id);
  const sharedObjects =
    deps.sandboxes.sharesObjects && deps.sandboxes.hostPath
      ? join(mirrorPath(deps.dataDir, resolveRepo(session.repo)), 'objects')
      : undefined;
  return {
    dataDir: deps.dataDir,
    repo: session.repo,
    workspaceDir: workspace.workspaceDir,
    ...(sharedObjects && { sharedObjects: SHARED_OBJECTS_PATH }),
    setupDigests: new Map(),
    checkSandbox: () =>
      deps.sandboxes.acquire(checksId, {
        network: deps.network,
        ...(sharedObjects && { sharedObjects }),
        ...(deps.runEpoch !== undefined && { epoch: deps.runEpoch }),
      }),
  };
}

/** Checks out the session's branch: a new one, or the one an earlier run of the session left. */
export async function ensureWorkspace(
  session: SessionRecord,
  deps: HarnessDeps,
  sandbox: Sandbox,
  signal: AbortSignal,
): Promise<Workspace> {
  const { store } = deps;
  // A local sandbox's workspace is a host directory the harness clones into; a remote one (Modal)
  // gets the checkout as a bundle of the host's mirror. Either way only the host holds credentials.
  const workspaceDir = deps.sandboxes.hostPath?.(session.id);
  const branch = session.branch ?? (await sessionBranch(session, deps.gates, deps.log, signal));
  const env = await firstGitEnv(deps.gitCredentials ?? [], session.repo, signal);
  const common = {
    ...(env && { env }),
    repo: session.repo,
    ...(session.baseBranch && { baseBranch: session.baseBranch }),
    branch,
    dataDir: deps.dataDir,
    log: deps.log.child({ sessionId: session.id }),
    signal,
  };
  const shared = deps.sandboxes.sharesObjects ? { sharedObjectsPath: SHARED_OBJECTS_PATH } : {};
  const prepared = workspaceDir
    ? await prepareWorkspace({ ...common, workspaceDir, ...shared })
    : await prepareRemoteWorkspace({ ...common, sandbox });
  if (prepared.reused) await clearStaleGitLocks(sandbox, deps.log.child({ sessionId: session.id }), signal);
  await store.commitStep(session.id, {
    patch: { branch, baseBranch: prepared.baseBranch },
    events: [
      {
        event: { type: 'workspace-ready', branch, baseBranch: prepared.baseBranch, baseCommit: prepared.baseCommit },
        dedupeKey: 'workspace-ready',
      },
    ],
  });
  return {
    branch,
    baseBranch: prepared.baseBranch,
    baseCommit: prepared.baseCommit,
    ...(workspaceDir && { workspaceDir }),
    reused: prepared.reused,
  };
}
