import { createImageIntake, defaultIntakeLimits } from './sessions/inbound/image-intake.ts';
import { createPgArtifactStore } from './sessions/harness-stores/pg-artifact-store.ts';
import type { Logger } from 'pino';
import type { SandboxProvider } from '../sandbox/sandbox.ts';
import { secureDataDir } from '../sandbox/secure-data-dir.ts';
import type { DatabaseHandle } from '../db/database.ts';
import type { ModalSandboxProvider } from '../sandbox/index.ts';
import type { IntegrationContext, IntegrationModule } from '../integrations/integration-module.ts';
import { createIntegrationHealth, type StartedIntegrations, type StartRetry } from './api/integration-health.ts';
import type { Metrics } from './api/metrics.ts';
import { pageSessionsFor, type PageSignIns } from './api/page-sessions.ts';
import { assertPortFree } from './start/port-check.ts';
import { listenAddress, type ApiServer } from './api/server.ts';
import type { Config } from './config.ts';
import { knowledgeKey } from './harness/knowledge/load-knowledge.ts';
import type { KnowledgeStore } from './harness/knowledge/knowledge-store.ts';
import type { ModelProvider } from './models/model-provider.ts';
import type { EventBus } from './sessions/notify/event-bus.ts';
import type { InboundPipeline } from './sessions/inbound/inbound-pipeline.ts';
import { createKnowledgeStore } from './sessions/harness-stores/pg-knowledge-store.ts';
import { createOutcomeStore } from './sessions/harness-stores/outcome-store.ts';
import type { RunQueue } from './sessions/worker/run-queue.ts';
import type { SessionService } from './sessions/inbound/session-service.ts';
import type { SetupImageRefresher } from './sessions/harness-stores/setup-image-refresher.ts';
import type { SessionStore } from './sessions/store/session-store.ts';
import { createSessionFamily } from './sessions/store/session-family-reader.ts';
import { createEgressWiring, type EgressWiring } from './start/egress-wiring.ts';
import { type EngineWiring, startEngines } from './start/engine-wiring.ts';
import { createRestartRecovery, type RestartRecovery } from './start/restart-recovery.ts';
import { createShutdown, type Shutdown } from './start/shutdown.ts';
import { startDatabase } from './start/start-database.ts';
import { startEventLog } from './start/start-event-log.ts';
import { startHealthPort, startHttpServer } from './start/start-http.ts';
import { startModels, type Models } from './start/start-model.ts';
import { assertModalCredentials, startLocalSandboxes, startModalSandboxes } from './start/start-sandboxes.ts';
import {
  startSessionPipeline,
  type InboundTuning,
  type QueueTuning,
  type SessionPipeline,
} from './start/start-sessions.ts';
import { connectIntegrations, startThreadReplies } from './start/start-integrations.ts';
import { startSetupImageRefresher, startWorker } from './start/start-worker.ts';

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
  /** The egress proxies' policy and the hosts people allowed, as every local sandbox's proxy reads them. */
  egress: EgressWiring['options'];
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
   * Hold the conversations from this process: work stored webhook deliveries, keep background
   * connections (Slack Socket Mode) and reply in threads. Default true; a `patchbay worker` only
   * takes runs, and leaves these to the API processes sharing its database.
   */
  conversations?: boolean;
  /** Use this model instead of the configured one (tests, the demo). */
  model?: ModelProvider;
  /** The independent verifier's model; default: VERIFIER_MODEL, a scripted scenario's `verifier`, or the main model. */
  verifierModel?: ModelProvider;
  /** Builds the integrations (Slack, GitHub, Linear) once the session service exists. */
  integrations?: (context: IntegrationContext) => Promise<IntegrationModule[]>;
  /** Queue tuning, for tests that kill workers. */
  queue?: QueueTuning;
  /** How an integration unreachable at start is retried (tests shorten it). */
  integrationRetry?: StartRetry;
  /** Inbound pipeline tuning, for tests of retries. */
  inbound?: InboundTuning;
};

/**
 * The composition root: builds every client from the config and wires the layers together, each
 * part after what it needs. A part that must reach one made later (the database's restarts reach
 * the queue and the worker; the server reports the integrations started after it listens) gets a
 * small object made first. A failed start closes what had started.
 */
export async function startPatchbay(config: Config, options: StartOptions): Promise<Patchbay> {
  const { log } = options;
  const shutdown = createShutdown(log);
  const restarts = createRestartRecovery(log);
  try {
    if (options.serve) await assertPortFree(config.port, listenAddress(config.apiToken));
    if (options.work && config.sandbox.modal) assertModalCredentials(config.sandbox.modal);
    const models = await startModels(config, options, log);
    const egress = createEgressWiring(config, log);
    // DATA_DIR closed to other local users, by whichever process starts first (API-only ones too).
    await secureDataDir(config.dataDir, { serverUid: process.getuid?.() });
    const takesLocalRuns = options.work && config.sandbox.kind !== 'modal';
    const engines = options.work ? await startEngines(config, { log, shutdown }) : undefined;
    const local = takesLocalRuns ? await startLocalSandboxes(config, { log, egress, shutdown, engines }) : undefined;
    const database = await startDatabase(config, { restarts, egress, log, shutdown });
    const modal =
      options.work && config.sandbox.kind === 'modal' ? await startModalSandboxes(config, database, log) : undefined;
    const eventLog = await startEventLog(config, { database, role: processRole(options), log, shutdown });
    const { store, metrics } = eventLog;
    egress.recordTo(store);
    engines?.recordTo(store);
    engines?.signInsFrom(database.db);
    const pipeline = await startSessionPipeline(config, options, { database, eventLog, restarts, log, shutdown });
    const knowledge = createKnowledgeStore(database.db);
    egress.allowFrom({ store, knowledge });
    // One set of page sessions for the server and the integrations that sign people in (GitHub).
    const pageSignIns = pageSessionsOf(config, database);
    const context = integrationContext(config, { database, store, knowledge, pipeline, pageSignIns, log });
    const modules = options.integrations ? await options.integrations(context) : [];
    const sandboxes: SandboxProvider | undefined = local ?? modal;
    const roles = await startRoles(config, options, {
      database,
      models,
      egress,
      store,
      metrics,
      pipeline,
      knowledge,
      pageSignIns,
      modules,
      sandboxes,
      modal,
      engines,
      restarts,
      log,
      shutdown,
    });
    const { bus, queue, service, inbound } = pipeline;
    return {
      config,
      log,
      database,
      store,
      service,
      bus,
      queue,
      inbound,
      sandboxes,
      egress: egress.options,
      metrics,
      ...(roles.setupImageRefresher && { setupImageRefresher: roles.setupImageRefresher }),
      model: models.model,
      ...(roles.http && { server: roles.http.server, url: roles.http.url }),
      ...(roles.healthUrl && { healthUrl: roles.healthUrl }),
      ...(roles.integrations && { integrations: roles.integrations }),
      close: shutdown.close,
      lost: database.lost,
    };
  } catch (error) {
    await shutdown.close();
    throw error;
  }
}

/** What the parts this process's roles start are built on. */
type RootParts = {
  database: DatabaseHandle;
  models: Models;
  egress: EgressWiring;
  store: SessionStore;
  metrics: Metrics;
  pipeline: SessionPipeline;
  knowledge: KnowledgeStore;
  pageSignIns: PageSignIns | undefined;
  modules: IntegrationModule[];
  sandboxes: SandboxProvider | undefined;
  modal: ModalSandboxProvider | undefined;
  /** The engines besides Patchbay's own loop and their relay, in a process that takes runs. */
  engines: EngineWiring | undefined;
  restarts: RestartRecovery;
  log: Logger;
  shutdown: Shutdown;
};

/**
 * What the process's roles add, in this order: the worker (`work`), the thread replies
 * (`conversations`), the HTTP server (`serve`) or the worker's health port, then the integrations'
 * connections and the stored deliveries (`conversations`).
 */
async function startRoles(config: Config, options: StartOptions, parts: RootParts) {
  const { store, pipeline, modules, log, shutdown } = parts;
  const { bus, queue, inbound } = pipeline;
  // Each integration offers its hooks by name; the harness gets every one of a kind, in order.
  const publishers = modules.flatMap((m) => (m.publisher ? [m.publisher] : []));
  const gitCredentials = modules.flatMap((m) => (m.gitCredentials ? [m.gitCredentials] : []));
  const repoAccess = modules.flatMap((m) => (m.repoAccess ? [m.repoAccess] : []));
  const interpreters = modules.flatMap((m) => (m.interpreter ? [m.interpreter] : []));
  const scouts = modules.flatMap((m) => (m.scout ? [m.scout] : []));
  const workerDeps = { ...parts, queue, bus, publishers, gitCredentials, scouts, repoAccess };
  if (options.work && parts.sandboxes) await startWorker(config, { ...workerDeps, sandboxes: parts.sandboxes });
  const setupImageRefresher = parts.modal && startSetupImageRefresher(config, parts.modal, workerDeps);
  const conversationsHere = options.conversations ?? true;
  if (conversationsHere) startThreadReplies(modules, { store, db: parts.database.db, bus, log, shutdown });
  const integrationHealth = createIntegrationHealth();
  const http = options.serve
    ? await startHttpServer(config, { ...parts, gitCredentials, integrationHealth })
    : undefined;
  const healthPort = options.serve ? undefined : config.workerHealthPort;
  const healthUrl = healthPort === undefined ? undefined : await startHealthPort(healthPort, parts);
  const integrations = conversationsHere
    ? await connectIntegrations(modules, interpreters, {
        inbound,
        health: integrationHealth,
        retry: options.integrationRetry,
        log,
        shutdown,
      })
    : undefined;
  return { setupImageRefresher, http, healthUrl, integrations };
}

/** Which of the three a process is, for the metrics' `role` label. */
function processRole(options: StartOptions): 'serve' | 'api' | 'worker' {
  if (!options.serve) return 'worker';
  return options.work ? 'serve' : 'api';
}

/** The page's sessions when PATCHBAY_API_TOKEN guards it. */
function pageSessionsOf(config: Config, database: DatabaseHandle): PageSignIns | undefined {
  return pageSessionsFor({
    db: database.db,
    apiToken: config.apiToken,
    publicUrl: config.publicUrl,
    hours: config.webSessionHours,
  });
}

/** What the integrations get from the root: the pipeline's inbox and the store's reads, by name. */
function integrationContext(
  config: Config,
  parts: {
    database: DatabaseHandle;
    store: SessionStore;
    knowledge: KnowledgeStore;
    pipeline: { inbound: InboundPipeline };
    pageSignIns: PageSignIns | undefined;
    log: Logger;
  },
): IntegrationContext {
  const { store, knowledge, pageSignIns } = parts;
  return {
    inbox: parts.pipeline.inbound,
    sessions: store,
    addLesson: (repo, text) => knowledge.addLesson(knowledgeKey(repo), text),
    outcomes: createOutcomeStore(parts.database.db),
    artifacts: createPgArtifactStore(parts.database.db),
    db: parts.database.db,
    log: parts.log,
    publicUrl: config.publicUrl,
    imageIntake: createImageIntake({
      artifacts: createPgArtifactStore(parts.database.db),
      limits: { ...defaultIntakeLimits, ...config.images },
    }),
    ...(pageSignIns && { pageSignIns }),
    family: createSessionFamily(store),
  };
}
