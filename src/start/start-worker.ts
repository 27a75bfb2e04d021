import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { ModalSandboxProvider } from '../../sandbox/index.ts';
import type { SandboxProvider } from '../../sandbox/sandbox.ts';
import type { DatabaseHandle } from '../../db/database.ts';
import { createDefaultTools } from '../agent/default-tools.ts';
import { createMergeSubtasksTool } from '../agent/merge-subtasks-tool.ts';
import type { AnyTool } from '../agent/tool.ts';
import { createToolRegistry } from '../agent/tool-registry.ts';
import type { Config } from '../config.ts';
import type { RepositoryScout } from '../core/repository-scout.ts';
import { ScoutPasses } from '../harness/knowledge/scout-passes.ts';
import { firstGitEnv, type GitCredentials, type Publisher } from '../core/publisher.ts';
import type { RepoAccess } from '../core/repo-access.ts';
import { bringBranches } from '../git/subtask-branches.ts';
import type { KnowledgeStore } from '../harness/knowledge/knowledge-store.ts';
import type { EventBus } from '../sessions/notify/event-bus.ts';
import type { RunQueue } from '../sessions/worker/run-queue.ts';
import { startApprovalExpiry } from '../sessions/worker/approval-expiry.ts';
import { createCheckStore } from '../sessions/harness-stores/pg-check-store.ts';
import { createCheckpointStore } from '../sessions/harness-stores/pg-checkpoint-store.ts';
import { createPgArtifactStore } from '../sessions/harness-stores/pg-artifact-store.ts';
import { createRunLeases } from '../sessions/worker/run-leases.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import { startSessionWorker, type SessionWorker } from '../sessions/worker/session-worker.ts';
import { createSubtaskSessions } from '../sessions/subtasks/subtask-sessions.ts';
import {
  createSetupImageRefresher,
  type SetupImageRefresher,
} from '../sessions/harness-stores/setup-image-refresher.ts';
import type { RestartRecovery } from './restart-recovery.ts';
import type { Models } from './start-model.ts';
import { startWorkspaceReaper } from './start-sandboxes.ts';
import { loadArtifactLinks } from './artifact-secret.ts';
import type { Shutdown } from './shutdown.ts';
import type { EngineWiring } from './engine-wiring.ts';
import { createPictureFitter, defaultIntakeLimits } from '../sessions/inbound/image-intake.ts';

/** What a process that takes runs hands the worker and its harness. */
export type WorkerDeps = {
  database: DatabaseHandle;
  store: SessionStore;
  queue: RunQueue;
  bus: EventBus;
  sandboxes: SandboxProvider;
  models: Models;
  knowledge: KnowledgeStore;
  /** Every integration's publisher and git credentials, in the order of the integrations. */
  publishers: Publisher[];
  gitCredentials: GitCredentials[];
  /** Every integration's repository scout. */
  scouts: RepositoryScout[];
  /** Every integration's check of a requester's access to a repository. */
  repoAccess: RepoAccess[];
  restarts: RestartRecovery;
  engines?: EngineWiring | undefined;
  log: Logger;
  shutdown: Shutdown;
};

/**
 * Takes runs from the queue in this process, each under its run lease; the runs it is running when
 * the database comes back are spared by the restart recovery. Idle workspaces are reaped.
 */
export async function startWorker(config: Config, deps: WorkerDeps): Promise<SessionWorker> {
  const { database, store, log } = deps;
  const artifacts = createPgArtifactStore(database.db);
  const pictures = createPictureFitter({ ...defaultIntakeLimits, ...config.images });
  const artifactLinks = await loadArtifactLinks(config);
  const scout =
    deps.scouts.length > 0
      ? new ScoutPasses(deps.scouts, { maxAgeMs: (config.github?.scout.maxAgeHours ?? 24) * 3_600_000 })
      : undefined;
  if (scout) deps.shutdown.add(() => scout.stop());
  const worker = await startSessionWorker({
    queue: deps.queue,
    bus: deps.bus,
    store,
    db: database.db,
    log,
    concurrency: config.worker.concurrency,
    leases: createRunLeases({
      db: database.db,
      owner: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
      leaseMs: config.worker.leaseSeconds * 1000,
      ...(config.worker.maxRunning !== undefined && { max: config.worker.maxRunning }),
    }),
    exclusive: database.exclusive,
    harness: {
      store,
      sandboxes: deps.sandboxes,
      model: deps.models.model,
      tools: createToolRegistry(sessionTools(config, deps), {
        artifacts,
        pictures,
      }),
      artifacts,
      pictures,
      artifactUrl: (id) => artifactLinks.url(id),
      dataDir: config.dataDir,
      network: config.sandbox.network,
      log,
      limits: config.limits,
      protectedBranches: config.protectedBranches,
      publicUrl: config.publicUrl,
      live: deps.bus,
      gates: {
        knowledge: deps.knowledge,
        checks: createCheckStore(database.db),
        verifier: deps.models.verifier,
        checkTimeoutMs: config.gates.checkTimeoutMs,
        maxCheckRounds: config.gates.maxCheckRounds,
        maxCostUsd: config.gates.maxCostUsd,
        maxMinutes: config.gates.maxMinutes,
        ...(scout && { scout }),
      },
      publishers: deps.publishers,
      gitCredentials: deps.gitCredentials,
      repoAccess: deps.repoAccess,
      checkpoints: { store: createCheckpointStore(database.db), maxBytes: config.worker.checkpointMaxBytes },
      approvals: config.approvals,
      ...(deps.engines && { engines: deps.engines.deps }),
      subtasks: {
        store: createSubtaskSessions({ store, queue: deps.queue }),
        repoBases: [config.github?.gitUrl ?? 'https://github.com'],
      },
    },
  });
  deps.restarts.spare(worker);
  deps.shutdown.add(() => worker.stop(config.worker.shutdownGraceMs));
  startWorkspaceReaper(deps.sandboxes, deps);
  startApprovalExpiry(deps);
  return worker;
}

/**
 * Every session's tools: the standard set with spawn_subtasks, and merge_subtasks, which gathers
 * the sub-tasks' branches through the host's mirror with the integrations' git credentials. The
 * registry is one for all sessions, so a session without sub-tasks has merge_subtasks too and is
 * told it has none to merge.
 */
function sessionTools(config: Config, deps: Pick<WorkerDeps, 'store' | 'gitCredentials' | 'log'>): AnyTool[] {
  const { store, gitCredentials, log } = deps;
  const merge = createMergeSubtasksTool({
    children: (parentId) => store.children(parentId),
    repoOf: async (sessionId) => (await store.get(sessionId))?.repo,
    bringBranches: async (request) => {
      const env = await firstGitEnv(gitCredentials, request.repo, request.signal);
      return bringBranches({ ...request, dataDir: config.dataDir, log, ...(env && { env }) });
    },
  });
  return [...createDefaultTools({ subtasksMax: config.subtasksMax }), merge];
}

/**
 * SANDBOX=modal workers with MODAL_TEMPLATE_REFRESH_MINUTES above 0: setup images follow the
 * default branch, and one that fell far behind is refreshed with the harness's git credentials
 * for the mirror.
 */
export function startSetupImageRefresher(
  config: Config,
  modal: ModalSandboxProvider,
  deps: Pick<WorkerDeps, 'database' | 'knowledge' | 'gitCredentials' | 'log' | 'shutdown'>,
): SetupImageRefresher | undefined {
  const refresh = config.sandbox.modal?.setupImageRefresh;
  if (!refresh) return undefined;
  const refresher = createSetupImageRefresher({
    images: modal,
    databaseUrl: deps.database.url,
    dataDir: config.dataDir,
    knowledge: deps.knowledge,
    gitCredentials: deps.gitCredentials,
    network: config.sandbox.network,
    minCommits: refresh.minCommits,
    everyMinutes: refresh.everyMinutes,
    setupTimeoutMs: config.gates.checkTimeoutMs,
    log: deps.log,
  });
  deps.shutdown.add(() => refresher.stop());
  return refresher;
}
