import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { hostname, networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import {
  createLocalSandboxProvider,
  createModalSandboxProvider,
  modalLogger,
  type ModalClientLike,
  type ModalSandboxProvider,
} from '../sandbox/index.ts';
import type { EgressPolicy, ProtectedEndpoint } from '../sandbox/egress-policy.ts';
import type { EgressBlock } from '../sandbox/egress-proxy.ts';
import type { SandboxProvider } from '../sandbox/sandbox.ts';
import { secureDataDir } from '../sandbox/secure-data-dir.ts';
import { createDefaultTools } from './agent/default-tools.ts';
import { createToolRegistry } from './agent/tool-registry.ts';
import { createServer, listenAddress, type ApiServer } from './api/server.ts';
import { pageSessionsFor } from './api/page-sessions.ts';
import { assertPortFree, listenError } from './api/port-check.ts';
import { createMetrics, type Metrics } from './api/metrics.ts';
import { observeStore } from './api/observed-store.ts';
import { startRunTracer, traceRunQueue } from './api/run-tracer.ts';
import {
  startIntegrations,
  type IntegrationState,
  type StartedIntegrations,
  type StartRetry,
} from './api/integration-health.ts';
import { startWorkerHealth } from './api/health.ts';
import type { Config, ModalConfig } from './config.ts';
import { PatchbayError } from './core/errors.ts';
import { firstGitEnv } from './core/publisher.ts';
import { openDatabase, type DatabaseHandle } from '../db/database.ts';
import { createModelProvider } from './models/create-model-provider.ts';
import type { ModelProvider } from './models/model-provider.ts';
import { createSequenceProvider, ScriptedScenario } from './models/scripted-provider.ts';
import { createUnconfiguredProvider } from './models/unconfigured-provider.ts';
import { createCheckStore } from './sessions/check-store.ts';
import { createCheckpointStore } from './sessions/checkpoint-store.ts';
import { createModalRecordStore } from './sessions/modal-record-store.ts';
import { createKnowledgeStore } from './sessions/knowledge-store.ts';
import { createOutcomeStore } from './sessions/outcome-store.ts';
import { knowledgeKey } from './harness/knowledge/load-knowledge.ts';
import { createEventBus, type EventBus } from './sessions/event-bus.ts';
import { createInboundPipeline, type InboundPipeline, type RetryPolicy } from './sessions/inbound-pipeline.ts';
import { createRunQueue, type RunQueue } from './sessions/run-queue.ts';
import { createRunLeases } from './sessions/run-leases.ts';
import { ensureMirror, mirrorPath, resolveRepo, withMirrorLock } from './git/mirror.ts';
import { createSessionService, type SessionService } from './sessions/session-service.ts';
import { createSetupImageRefresher, type SetupImageRefresher } from './sessions/setup-image-refresher.ts';
import { createSessionStore, type SessionStore } from './sessions/session-store.ts';
import { startSessionWorker } from './sessions/session-worker.ts';
import { startThreadNotifier } from './sessions/thread-notifier.ts';
import type { IntegrationContext, IntegrationModule } from '../integrations/integration-module.ts';

export type Patchbay = {
  config: Config;
  log: Logger;
  database: DatabaseHandle;
  store: SessionStore;
  service: SessionService;
  bus: EventBus;
  queue: RunQueue;
  inbound: InboundPipeline;
  /** The sandboxes runs use: only in a process that takes runs. */
  sandboxes?: SandboxProvider | undefined;
  /** SANDBOX=modal workers with MODAL_TEMPLATE_REFRESH_MINUTES above 0: the background refresh of setup images. */
  setupImageRefresher?: SetupImageRefresher | undefined;
  model: ModelProvider;
  server?: ApiServer;
  /** Where the HTTP server listens, when it was started. */
  url?: string;
  /** Where a process without the HTTP server answers health probes (WORKER_HEALTH_PORT). */
  healthUrl?: string;
  /** Prometheus metrics of this process (GET /metrics on the API, and on WORKER_HEALTH_PORT). */
  metrics: Metrics;
  /** The integrations this process connects (Slack, GitHub, Linear), with their health. */
  integrations?: StartedIntegrations;
  /** Resolves when the embedded database died for good: the process should exit non-zero. */
  lost: Promise<Error>;
  close(): Promise<void>;
};

export type StartOptions = {
  log: Logger;
  /** Start the HTTP server. */
  serve?: boolean;
  /** Take runs from the queue in this process. */
  work?: boolean;
  /**
   * Talk to the surfaces from this process: work stored webhook deliveries, keep background
   * connections (Slack Socket Mode) and reply in threads. Default true; a `patchbay worker` only
   * takes runs, and leaves these to the API processes sharing its database.
   */
  surfaces?: boolean;
  /** Use this model instead of the configured one (tests, the demo). */
  model?: ModelProvider;
  /** The independent verifier's model; default: VERIFIER_MODEL, a scripted scenario's `verifier`, or the main model. */
  verifierModel?: ModelProvider;
  /** Builds the integrations (Slack, GitHub, Linear) once the session service exists. */
  integrations?: (context: IntegrationContext) => Promise<IntegrationModule[]>;
  /** Queue tuning, for tests that kill workers. */
  queue?: { heartbeatSeconds?: number; monitorIntervalSeconds?: number; pollingIntervalSeconds?: number };
  /** How an integration unreachable at start is retried (tests shorten it). */
  integrationRetry?: StartRetry;
  /** Inbound pipeline tuning, for tests of retries. */
  inbound?: { retry?: RetryPolicy; pollingIntervalSeconds?: number };
};

/** The composition root: builds every client from the config and wires the layers together. */
export async function startPatchbay(config: Config, options: StartOptions): Promise<Patchbay> {
  const { log } = options;
  const cleanups: (() => Promise<unknown>)[] = [];
  let beginClose: () => void = () => undefined;
  const close = async () => {
    beginClose();
    for (const cleanup of cleanups.reverse())
      await cleanup().catch((error: unknown) => log.warn({ err: error }, 'shutdown step failed'));
  };
  try {
    if (options.serve) await assertPortFree(config.port, listenAddress(config.apiToken));
    if (options.work && config.sandbox.modal) assertModalCredentials(config.sandbox.modal);
    const built = options.model ? { model: options.model } : await buildModel(config, log);
    const model = built.model;
    const verifierModel =
      options.verifierModel ??
      built.verifier ??
      (config.gates.verifierModel && !options.model
        ? createModelProvider({ ...config.model, model: config.gates.verifierModel }, { log })
        : model);
    const egress = egressWiring(config, log);
    // DATA_DIR closed to other local users, by whichever process starts first (API-only ones too).
    await secureDataDir(config.dataDir, { serverUid: process.getuid?.() });
    // The local sandbox is checked before the database starts, so a host that cannot sandbox fails
    // fast; only a process that takes runs has sandboxes.
    const local =
      !options.work || config.sandbox.kind === 'modal'
        ? undefined
        : await createLocalSandboxProvider({
            dataDir: config.dataDir,
            log,
            ttlMinutes: config.sandbox.ttlMinutes,
            mode: config.sandbox.kind === 'local' ? 'bwrap' : 'unsafe-local',
            limits: config.sandbox.limits,
            limitMode: config.sandbox.limitMode,
            diskQuota: config.sandbox.diskQuota,
            usrLocal: config.sandbox.usrLocal,
            sandboxUser: config.sandbox.user,
            ...(config.sandbox.network === 'proxy' && { egress: egress.options }),
          });
    if (local) cleanups.push(() => local.close());
    let reclaim: () => void = () => undefined;
    // Runs this process is running when its database comes back are not cut off: they wait for it
    // and carry on (session-worker), so only the others are handed out again.
    let runningHere: () => ReadonlySet<string> = () => new Set();
    const database = await openDatabase({
      ...(config.databaseUrl && { url: config.databaseUrl }),
      dataDir: config.dataDir,
      log,
      // Runs cut off while the database was down hold their queue jobs: hand them out again.
      onRestarted: () => reclaim(),
    });
    cleanups.push(() => database.close());
    beginClose = () => database.beginClose();
    egress.protect(databaseEndpoint(database.url));
    const modal =
      options.work && config.sandbox.kind === 'modal' ? await modalProvider(config, database, log) : undefined;
    const sandboxes: SandboxProvider | undefined = local ?? modal;
    // Metrics (and traces, with OTEL_EXPORTER_OTLP_ENDPOINT) see what this process writes to the event log.
    const metrics = createMetrics({
      db: database.db,
      provider: String(config.model.provider),
      role: options.serve ? (options.work ? 'serve' : 'api') : 'worker',
    });
    const tracer = config.otlpEndpoint ? await startRunTracer({ endpoint: config.otlpEndpoint, log }) : undefined;
    if (tracer) cleanups.push(() => tracer.shutdown());
    const store = observeStore(createSessionStore(database.db), tracer ? [metrics, tracer] : [metrics]);
    egress.recordTo(store);
    // The bus outlives the queue at shutdown, so a stop still reaches runs finishing their grace period.
    const bus = await createEventBus({ url: database.url, log });
    cleanups.push(() => bus.close());
    // With traces on, each run's job carries the trace context of the delivery that queued it.
    const queue = traceRunQueue(
      await createRunQueue({
        url: database.url,
        log,
        heartbeatSeconds: config.worker.heartbeatSeconds,
        monitorIntervalSeconds: config.worker.monitorIntervalSeconds,
        ...options.queue,
      }),
      tracer,
    );
    cleanups.push(() => queue.stop());
    // Our own embedded database has just started: no other process can be working on its runs, so
    // runs still marked active belong to a predecessor that died. Take them back now rather than
    // after the queue's heartbeat and monitor notice (tens of seconds).
    if (database.exclusive && options.work) {
      reclaim = () =>
        void queue.reclaimActive({ except: runningHere() }).then(
          (runs) =>
            log.info(
              { runs },
              runs > 0
                ? 'took back runs cut off by the database restart'
                : 'looked for runs cut off by the database restart: none',
            ),
          (error: unknown) =>
            log.warn({ err: error }, 'could not take back runs after the database restart; the queue heartbeat will'),
        );
      const reclaimed = await queue.reclaimActive();
      if (reclaimed > 0)
        log.info({ runs: reclaimed }, 'took back runs of a server that stopped without finishing them');
    }
    const service = createSessionService({ store, queue, log });
    // What every delivery goes through; traced when traces are on.
    const handle = tracer ? tracer.traceInbound(service.handle) : service.handle;
    const knowledge = createKnowledgeStore(database.db);
    const inbound = createInboundPipeline({
      db: database.db,
      boss: queue.boss,
      handle,
      log,
      heartbeatSeconds: options.queue?.heartbeatSeconds ?? config.worker.heartbeatSeconds,
      ...(options.inbound?.retry && { retry: options.inbound.retry }),
      pollingIntervalSeconds: options.inbound?.pollingIntervalSeconds ?? options.queue?.pollingIntervalSeconds ?? 2,
      ...(config.deliveryRetentionDays !== undefined && { retentionDays: config.deliveryRetentionDays }),
    });
    // One set of page sessions for the server and the integrations that sign people in (GitHub).
    const pageSessions = pageSessionsFor({
      db: database.db,
      apiToken: config.apiToken,
      publicUrl: config.publicUrl,
      hours: config.webSessionHours,
    });
    const modules = options.integrations
      ? await options.integrations({
          inbox: inbound,
          getSession: store.get,
          findSession: store.findByThread,
          addThread: store.addThread,
          sessionThreads: store.threads,
          sessionEvents: (sessionId, types) => store.events(sessionId, { types }),
          addLesson: (repo, text) => knowledge.addLesson(knowledgeKey(repo), text),
          outcomes: createOutcomeStore(database.db),
          db: database.db,
          log,
          publicUrl: config.publicUrl,
          ...(pageSessions && { pageSessions }),
        })
      : [];
    // Each integration offers its hooks by name; the harness gets every one of a kind, in order.
    const publishers = modules.flatMap((m) => (m.publisher ? [m.publisher] : []));
    const gitCredentials = modules.flatMap((m) => (m.gitCredentials ? [m.gitCredentials] : []));
    const surfacesHere = options.surfaces ?? true;
    if (options.work && sandboxes) {
      const worker = await startSessionWorker({
        queue,
        bus,
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
          sandboxes,
          model,
          tools: createToolRegistry(createDefaultTools()),
          dataDir: config.dataDir,
          network: config.sandbox.network,
          log,
          limits: config.limits,
          protectedBranches: config.protectedBranches,
          publicUrl: config.publicUrl,
          live: bus,
          gates: {
            knowledge,
            checks: createCheckStore(database.db),
            verifier: verifierModel,
            checkTimeoutMs: config.gates.checkTimeoutMs,
            maxCheckRounds: config.gates.maxCheckRounds,
            maxCostUsd: config.gates.maxCostUsd,
            maxMinutes: config.gates.maxMinutes,
          },
          publishers,
          gitCredentials,
          checkpoints: { store: createCheckpointStore(database.db), maxBytes: config.worker.checkpointMaxBytes },
        },
      });
      runningHere = () => worker.running();
      cleanups.push(() => worker.stop(config.worker.shutdownGraceMs));
      const reaper = setInterval(() => {
        sandboxes.reap().then(
          (removed) => removed.length && log.info({ removed }, 'removed idle workspaces'),
          (error: unknown) => log.warn({ err: error }, 'workspace reaper failed'),
        );
      }, 10 * 60_000);
      reaper.unref();
      cleanups.push(async () => clearInterval(reaper));
    }
    let setupImageRefresher: SetupImageRefresher | undefined;
    const refresh = config.sandbox.modal?.setupImageRefresh;
    if (modal && refresh) {
      // Setup images follow the default branch: a worker refreshes one that fell far behind, with
      // the harness's git credentials for the mirror.
      setupImageRefresher = createSetupImageRefresher({
        images: modal,
        databaseUrl: database.url,
        dataDir: config.dataDir,
        knowledge,
        gitCredentials,
        network: config.sandbox.network,
        minCommits: refresh.minCommits,
        everyMinutes: refresh.everyMinutes,
        setupTimeoutMs: config.gates.checkTimeoutMs,
        log,
      });
      cleanups.push(() => setupImageRefresher!.stop());
    }
    const repliers = modules.map((m) => m.replier);
    if (modules.length > 0 && surfacesHere) {
      const notifier = startThreadNotifier({ store, db: database.db, bus, repliers, log });
      cleanups.push(() => notifier.close());
    }
    // Filled in once the integrations start (after the server listens): /healthz reports each one.
    let integrationHealth: () => Record<string, IntegrationState> = () => ({});
    const patchbay: Patchbay = {
      config,
      log,
      database,
      store,
      service,
      bus,
      queue,
      inbound,
      sandboxes,
      metrics,
      ...(setupImageRefresher && { setupImageRefresher }),
      model,
      close,
      lost: database.lost,
    };
    if (options.serve) {
      const server = createServer({
        service,
        store,
        db: database.db,
        bus,
        deliveries: inbound,
        log,
        publicUrl: config.publicUrl,
        dataDir: config.dataDir,
        // An API process holds no mirror its workers pushed through: it fetches one to show a diff.
        refreshMirror: async (repo: string, signal: AbortSignal) => {
          const env = await firstGitEnv(gitCredentials, repo, signal);
          await withMirrorLock(mirrorPath(config.dataDir, resolveRepo(repo)), () =>
            ensureMirror(repo, { dataDir: config.dataDir, log, signal, ...(env && { env }) }),
          );
        },
        githubWebUrl: config.github?.gitUrl ?? 'https://github.com',
        allowLocalRepos: config.allowLocalRepos,
        ...(config.apiToken && { apiToken: config.apiToken }),
        ...(pageSessions && { pageSessions }),
        signInProviders: modules.flatMap((m) => (m.pageSignIn ? [m.pageSignIn] : [])),
        integrationHealth: () => integrationHealth(),
        metrics,
      });
      cleanups.push(() => server.close());
      for (const module of modules) if (module.routes) await server.register(module.routes);
      patchbay.server = server;
      patchbay.url = await server
        .listen({ port: config.port, host: listenAddress(config.apiToken) })
        .catch((error: unknown) => {
          throw listenError(config.port, error);
        });
      egress.protect({ host: new URL(config.publicUrl).hostname, port: Number(new URL(patchbay.url).port) });
    }
    if (!options.serve && config.workerHealthPort !== undefined) {
      const health = await startWorkerHealth({ port: config.workerHealthPort, db: database.db, log, metrics });
      cleanups.push(health.close);
      patchbay.healthUrl = health.url;
    }
    if (surfacesHere) {
      const integrations = await startIntegrations(modules, {
        log,
        ...(options.integrationRetry && { retry: options.integrationRetry }),
      });
      cleanups.push(() => integrations.stop());
      integrationHealth = integrations.health;
      patchbay.integrations = integrations;
    }
    // Deliveries stored by any process (or before a crash) are worked by every process with surfaces,
    // once those are connected; stopped before them at shutdown.
    const surfaces = modules.flatMap((m) => (m.surface ? [m.surface] : []));
    if (surfaces.length > 0 && surfacesHere) {
      await inbound.start(surfaces);
      cleanups.push(() => inbound.stop());
    }
    return patchbay;
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The egress proxy's policy and where its refusals go. Patchbay's own endpoints (this host's
 * addresses, the database, the server) are protected unless an entry names them exactly; the
 * database and server are added once they are known. Refusals become `egress-blocked` events,
 * one per host and port per session.
 */
function egressWiring(config: Config, log: Logger) {
  if (config.sandbox.network === 'host') {
    log.warn(
      "SANDBOX_NETWORK=host: sandboxed commands share this host's network and can reach its database, its API and every service it can; use SANDBOX_NETWORK=proxy unless you trust every repository and prompt",
    );
  }
  const protectedEndpoints: ProtectedEndpoint[] = ownAddresses().map((host) => ({ host }));
  const policy: EgressPolicy = { rules: config.sandbox.egress.allow, protectedEndpoints };
  let store: SessionStore | undefined;
  const onBlocked = (sessionId: string, block: EgressBlock): void => {
    if (!store) return;
    store
      .append(sessionId, [
        { event: { type: 'egress-blocked', ...block }, dedupeKey: `egress-blocked:${block.host}:${block.port}` },
      ])
      .catch((error: unknown) =>
        log.warn({ err: error, sessionId, host: block.host }, 'could not record a refused egress connection'),
      );
  };
  return {
    options: { policy, secrets: config.sandbox.egress.secrets, onBlocked },
    protect: (endpoint: ProtectedEndpoint) => protectedEndpoints.push(endpoint),
    recordTo: (sessionStore: SessionStore) => {
      store = sessionStore;
    },
  };
}

/** This host's own non-loopback addresses: every service listening on all interfaces is behind them. */
function ownAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => !entry.internal)
    .map((entry) => entry.address);
}

/**
 * SANDBOX=modal with no credentials at all: refused at start, before the database, rather than a
 * worker that starts cleanly and fails every session when it first asks Modal for a sandbox.
 */
function assertModalCredentials(modal: ModalConfig): void {
  if (modal.tokenId || existsSync(modal.configFile)) return;
  throw new PatchbayError(
    'config_invalid',
    `SANDBOX=modal needs Modal credentials: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET (modal.com → Settings → API Tokens), or run \`modal token new\` to write ${modal.configFile}`,
  );
}

/** SANDBOX=modal: the Modal SDK's client (it reads MODAL_SERVER_URL itself) and the records in the database. */
async function modalProvider(config: Config, database: DatabaseHandle, log: Logger): Promise<ModalSandboxProvider> {
  const modal = config.sandbox.modal;
  if (!modal) throw new PatchbayError('config_invalid', 'SANDBOX=modal without its settings');
  // Loaded only when configured: the SDK takes a quarter of a second to load, on every restart.
  const { ModalClient } = await import('modal');
  let client: ModalClientLike;
  try {
    client = new ModalClient({
      ...(modal.tokenId && { tokenId: modal.tokenId }),
      ...(modal.tokenSecret && { tokenSecret: modal.tokenSecret }),
      logger: modalLogger(log),
    });
  } catch (error) {
    throw new PatchbayError(
      'config_invalid',
      `SANDBOX=modal: the Modal client could not be set up: ${(error as Error).message}`,
      { cause: error },
    );
  }
  log.info({ app: modal.appName, image: modal.image, network: config.sandbox.network }, 'sandboxes run on Modal');
  return createModalSandboxProvider({
    client,
    store: createModalRecordStore(database.db),
    settings: modal,
    egressRules: config.sandbox.egress.allow,
    log,
    ttlMinutes: config.sandbox.ttlMinutes,
    runMaxMs: config.limits.maxWallMs,
  });
}

function databaseEndpoint(url: string): ProtectedEndpoint {
  const parsed = new URL(url);
  return { host: parsed.hostname || 'localhost', port: Number(parsed.port || 5432) };
}

async function buildModel(config: Config, log: Logger): Promise<{ model: ModelProvider; verifier?: ModelProvider }> {
  const { scenarioPath, ...modelConfig } = config.model;
  if (modelConfig.provider === 'scripted' && scenarioPath) {
    let scenario: ReturnType<typeof ScriptedScenario.parse>;
    try {
      scenario = ScriptedScenario.parse(JSON.parse(await readFile(scenarioPath, 'utf8')));
    } catch (error) {
      throw new PatchbayError(
        'config_invalid',
        `SCRIPTED_SCENARIO ${scenarioPath} is not a readable scenario file: ${(error as Error).message}`,
      );
    }
    return {
      model: createModelProvider({ ...modelConfig, scenario: scenario.turns }, { log }),
      ...(scenario.verifier && { verifier: createSequenceProvider(scenario.verifier) }),
    };
  }
  // The scripted model with no scenario is what an unset MODEL_PROVIDER means: no model at all.
  if (modelConfig.provider === 'scripted') {
    log.warn(
      'MODEL_PROVIDER is not set: sessions fail with "no model is configured" until it is set with its API key (see the README, "Connect a model")',
    );
    return { model: createUnconfiguredProvider() };
  }
  return { model: createModelProvider(modelConfig, { log }) };
}
