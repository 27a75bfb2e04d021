import type { ImageIntake } from '../core/attachment.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Fastify, { LogController, type FastifyInstance, type RawServerDefault } from 'fastify';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.ts';
import type { EventBus } from '../sessions/notify/event-bus.ts';
import type { InboundPipeline } from '../sessions/inbound/inbound-pipeline.ts';
import type { SessionService } from '../sessions/inbound/session-service.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import { registerDeliveryRoutes } from './delivery-routes.ts';
import { errorReply } from './error-reply.ts';
import { databaseHealth } from './health.ts';
import type { PageSignInProvider } from '../core/page-sign-in.ts';
import { createAccessCheck, registerPageAuth, type AccessCheck } from './page-auth.ts';
import { refuseCrossSite } from './cross-site.ts';
import { createPageSignIns, type PageSignIns } from './page-sessions.ts';
import { isLoopbackHost } from './host-check.ts';
import type { IntegrationState } from './integration-health.ts';
import type { Metrics } from './metrics.ts';
import { registerSessionRoutes } from './session-routes.ts';
import { registerKnowledgeRoutes } from './knowledge-routes.ts';
import { registerInsightsRoutes } from './insights-routes.ts';
import { registerWebPage } from './web-page.ts';
import type { ArtifactStore } from '../core/artifact-store.ts';
import type { ArtifactLinks } from './artifact-links.ts';
import { registerArtifactRoutes } from './artifact-routes.ts';

/** Per-route settings; `public` routes skip the API token check. */
export type RouteConfig = { public?: boolean };

/** The server type, with the app's pino logger as Fastify's logger. */
export type ApiServer = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, Logger>;

export type ServerDeps = {
  service: SessionService;
  store: SessionStore;
  /** The database of the routes that read across sessions (knowledge, insights), page sign-ins and /healthz. */
  db: Db;
  bus: EventBus;
  /** The inbound pipeline's stored deliveries, for GET /api/deliveries. */
  deliveries?: Pick<InboundPipeline, 'list'>;
  log: Logger;
  /** When set, every /api route needs `Authorization: Bearer <apiToken>`. */
  apiToken?: string;
  /** Where people reach this server; session links are built from it. Defaults to the request's host. */
  publicUrl?: string;
  /** How often an idle event stream gets a keep-alive comment. */
  keepAliveMs?: number;
  /** Where the git mirrors are: diffs are read from them. */
  dataDir?: string;
  /** Fetches a repository into this host's mirror (an API process whose workers pushed elsewhere). */
  refreshMirror?: (repo: string, signal: AbortSignal) => Promise<void>;
  /** Web address of the GitHub host, for links to pull requests and issues. */
  githubWebUrl?: string;
  /**
   * Accept a path on this server's disk as a session's repository (PATCHBAY_ALLOW_LOCAL_REPOS);
   * otherwise the API takes only git URLs, and local paths are for the CLI.
   */
  allowLocalRepos?: boolean;
  /** Other ways to sign in to the page than the token, offered by integrations (GitHub sign-in). */
  signInProviders?: readonly PageSignInProvider[];
  /** The page's server-side sessions (with apiToken); built on the store's database when not given. */
  pageSignIns?: PageSignIns;
  /** Each integration's state, reported by /healthz beside the database's. */
  integrationHealth?: () => Record<string, IntegrationState>;
  /** Served at GET /metrics (Prometheus text format); behind the API token when one is set. */
  metrics?: Pick<Metrics, 'render' | 'contentType'>;
  /** Takes in the pictures dropped on the page's message box (as Slack's and GitHub's are). */
  imageIntake?: ImageIntake | undefined;
  /** Session artifacts and their signed links: GET /artifacts/:id and GET /api/sessions/:id/artifacts. */
  artifacts?: { store: ArtifactStore; links: ArtifactLinks };
};

/**
 * Where to listen: without a token the API is open, so it only listens on loopback; with one it
 * may be reached from elsewhere.
 */
export function listenAddress(apiToken?: string): string {
  return apiToken ? '0.0.0.0' : '127.0.0.1';
}

/** The routes that read across sessions: repository knowledge (editable) and insights. */
function registerReportRoutes(app: ApiServer, db: Db): void {
  registerKnowledgeRoutes(app, { db });
  registerInsightsRoutes(app, { db });
}

/** Builds the HTTP server (REST, event streams, web page, health check). The caller listens. */
export function createServer(deps: ServerDeps): ApiServer {
  const { store, log } = deps;
  const app = Fastify({
    loggerInstance: log,
    // Fastify's two info lines per request were most of an operator's terminal: one debug line
    // per request instead (LOG_LEVEL=debug shows them), none for the probes of /healthz.
    logController: new LogController({ disableRequestLogging: true }),
  });
  logRequests(app);
  app.setErrorHandler((error, request, reply) => errorReply(error, request, reply));
  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send({ error: 'not_found', message: `no route for ${request.method} ${request.url.split('?')[0]}` }),
  );
  if (!deps.apiToken) refuseForeignHosts(app, deps.publicUrl);
  // With or without a token: a page on another site must not change anything here (CSRF).
  refuseCrossSite(app, deps.publicUrl);

  const sessions = deps.apiToken
    ? (deps.pageSignIns ??
      createPageSignIns({ db: deps.db, token: deps.apiToken, secure: deps.publicUrl?.startsWith('https:') ?? false }))
    : undefined;
  const check = deps.apiToken && sessions ? createAccessCheck(deps.apiToken, sessions) : undefined;
  if (check) requireToken(app, check);
  registerProbeRoutes(app, deps, check);
  registerReportRoutes(app, deps.db);
  registerSessionRoutes(app, {
    service: deps.service,
    store,
    bus: deps.bus,
    log,
    keepAliveMs: deps.keepAliveMs ?? 15_000,
    githubWebUrl: deps.githubWebUrl ?? 'https://github.com',
    allowLocalRepos: deps.allowLocalRepos ?? false,
    ...(deps.publicUrl && { publicUrl: deps.publicUrl }),
    ...(deps.dataDir && { dataDir: deps.dataDir }),
    ...(deps.refreshMirror && { refreshMirror: deps.refreshMirror }),
    imageIntake: deps.imageIntake,
  });
  if (deps.deliveries) registerDeliveryRoutes(app, deps.deliveries);
  if (deps.artifacts)
    registerArtifactRoutes(app, { artifacts: deps.artifacts.store, links: deps.artifacts.links, store });
  registerPageAuth(app, {
    ...(deps.apiToken && { apiToken: deps.apiToken }),
    ...(check && { check }),
    ...(sessions && { sessions }),
    ...(deps.signInProviders && { providers: deps.signInProviders }),
  });
  app.register(async (child) => registerWebPage(child as unknown as ApiServer, log));
  return app;
}

/** One debug line per request, none for the probes of /healthz. */
function logRequests(app: ApiServer): void {
  app.addHook('onResponse', async (request, reply) => {
    if (request.url === '/healthz') return;
    request.log.debug(
      {
        method: request.method,
        url: request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });
}

/** No token: the API trusts loopback, so it must be loopback by name too (DNS rebinding). */
function refuseForeignHosts(app: ApiServer, publicUrl: string | undefined): void {
  const publicHost = publicUrl ? [new URL(publicUrl).host] : [];
  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url;
    const isApi = route !== undefined && (route === '/api' || route.startsWith('/api/'));
    if (!isApi || isLoopbackHost(request.headers.host, publicHost)) return;
    request.log.warn(
      { host: request.headers.host },
      'API request refused: Host is not a loopback name and no API token is set',
    );
    return reply.code(403).send({
      error: 'forbidden_host',
      message:
        'Without PATCHBAY_API_TOKEN the API answers only requests addressed to localhost, 127.0.0.1, [::1] or the PUBLIC_URL host',
    });
  });
}

/**
 * Everything under /api needs the token. Decided by the matched route pattern, not the raw URL:
 * the router decodes paths, so '/%61pi/...' reaches /api routes too. Webhook routes (Slack,
 * GitHub) verify their own signatures and the page is public.
 */
function requireToken(app: ApiServer, check: AccessCheck): void {
  app.addHook('onRequest', async (request, reply) => {
    const route = request.routeOptions.url;
    const needsToken = route === undefined ? false : route === '/api' || route.startsWith('/api/');
    if (!needsToken || (request.routeOptions.config as RouteConfig).public === true) return;
    if (await check(request)) return;
    return reply.code(401).header('www-authenticate', 'Bearer realm="patchbay"').send({
      error: 'unauthorized',
      message: 'send Authorization: Bearer <token> with the API token, or sign in on the page',
    });
  });
}

/** GET /healthz (the database, and each integration's state) and GET /metrics. */
function registerProbeRoutes(
  app: ApiServer,
  deps: Pick<ServerDeps, 'db' | 'log' | 'integrationHealth' | 'metrics'>,
  check: AccessCheck | undefined,
): void {
  const health = databaseHealth(deps.db, deps.log);
  app.get('/healthz', { config: { public: true } satisfies RouteConfig }, async (_request, reply) => {
    const { status, body } = await health();
    // An unreachable integration does not fail the probe: the rest of Patchbay serves without it.
    const integrations = deps.integrationHealth?.() ?? {};
    return reply.code(status).send(Object.keys(integrations).length > 0 ? { ...body, integrations } : body);
  });
  const metrics = deps.metrics;
  if (!metrics) return;
  app.get('/metrics', { config: { public: true } satisfies RouteConfig }, async (request, reply) => {
    // Prometheus sends the token as `bearer_token`; without one configured the API is loopback-only.
    if (check && !(await check(request)))
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="patchbay"')
        .send({ error: 'unauthorized', message: 'send Authorization: Bearer <PATCHBAY_API_TOKEN>' });
    return reply.header('content-type', metrics.contentType).send(await metrics.render());
  });
}
