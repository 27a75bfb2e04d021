import { createImageIntake, defaultIntakeLimits } from '../sessions/inbound/image-intake.ts';
import type { Logger } from 'pino';
import type { IntegrationModule } from '../../integrations/integration-module.ts';
import type { DatabaseHandle } from '../../db/database.ts';
import type { IntegrationHealth } from '../api/integration-health.ts';
import type { Metrics } from '../api/metrics.ts';
import type { PageSignIns } from '../api/page-sessions.ts';
import { listenError } from './port-check.ts';
import { createServer, listenAddress, type ApiServer } from '../api/server.ts';
import { startWorkerHealth } from '../api/health.ts';
import type { Config } from '../config.ts';
import { firstGitEnv, type GitCredentials } from '../core/publisher.ts';
import { ensureMirror, mirrorPath, resolveRepo, withMirrorLock } from '../git/mirror.ts';
import type { SessionPipeline } from './start-sessions.ts';
import type { EgressWiring } from './egress-wiring.ts';
import type { EngineWiring } from './engine-wiring.ts';
import { registerEngineRelayRoute } from '../api/engine-relay-route.ts';
import type { Shutdown } from './shutdown.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import { createPgArtifactStore } from '../sessions/harness-stores/pg-artifact-store.ts';
import { loadArtifactLinks } from './artifact-secret.ts';

export type HttpServerDeps = {
  pipeline: SessionPipeline;
  store: SessionStore;
  /** The database of the tables the server reads besides the session store's (reports, page sign-ins). */
  database: DatabaseHandle;
  metrics: Metrics;
  /** The integrations whose routes and page sign-ins the server serves. */
  modules: readonly IntegrationModule[];
  gitCredentials: GitCredentials[];
  pageSignIns?: PageSignIns | undefined;
  integrationHealth: IntegrationHealth;
  egress: EgressWiring;
  /** In a process that also takes runs: its engine relay, served at /engine-relay/ to Modal sandboxes. */
  engines?: Pick<EngineWiring, 'relay'> | undefined;
  log: Logger;
  shutdown: Shutdown;
};

/** The HTTP server with every integration's routes, listening on PORT; sandboxes may not reach it. */
export async function startHttpServer(
  config: Config,
  deps: HttpServerDeps,
): Promise<{ server: ApiServer; url: string }> {
  const { log, pipeline, pageSignIns } = deps;
  const artifacts = { store: createPgArtifactStore(deps.database.db), links: await loadArtifactLinks(config) };
  const server = createServer({
    service: pipeline.service,
    store: deps.store,
    db: deps.database.db,
    bus: pipeline.bus,
    deliveries: pipeline.inbound,
    log,
    publicUrl: config.publicUrl,
    dataDir: config.dataDir,
    // An API process holds no mirror its workers pushed through: it fetches one to show a diff.
    refreshMirror: async (repo: string, signal: AbortSignal) => {
      const env = await firstGitEnv(deps.gitCredentials, repo, signal);
      await withMirrorLock(mirrorPath(config.dataDir, resolveRepo(repo)), () =>
        ensureMirror(repo, { dataDir: config.dataDir, log, signal, ...(env && { env }) }),
      );
    },
    githubWebUrl: config.github?.gitUrl ?? 'https://github.com',
    allowLocalRepos: config.allowLocalRepos,
    ...(config.apiToken && { apiToken: config.apiToken }),
    ...(pageSignIns && { pageSignIns }),
    signInProviders: deps.modules.flatMap((m) => (m.pageSignIn ? [m.pageSignIn] : [])),
    integrationHealth: deps.integrationHealth.report,
    metrics: deps.metrics,
    artifacts,
    imageIntake: createImageIntake({
      artifacts: artifacts.store,
      limits: { ...defaultIntakeLimits, ...config.images },
    }),
  });
  deps.shutdown.add(() => server.close());
  for (const module of deps.modules) if (module.routes) await server.register(module.routes);
  // Only Modal sandboxes reach the relay this way; local ones go through loopback.
  if (deps.engines && config.sandbox.kind === 'modal') registerEngineRelayRoute(server, deps.engines.relay);
  const url = await server
    .listen({ port: config.port, host: listenAddress(config.apiToken) })
    .catch((error: unknown) => {
      throw listenError(config.port, error);
    });
  deps.egress.protect({ host: new URL(config.publicUrl).hostname, port: Number(new URL(url).port) });
  return { server, url };
}

/** WORKER_HEALTH_PORT in a process without the HTTP server: `/healthz` and `/metrics` on it. */
export async function startHealthPort(
  port: number,
  deps: { database: DatabaseHandle; metrics: Metrics; log: Logger; shutdown: Shutdown },
): Promise<string> {
  const health = await startWorkerHealth({ port, db: deps.database.db, log: deps.log, metrics: deps.metrics });
  deps.shutdown.add(health.close);
  return health.url;
}
