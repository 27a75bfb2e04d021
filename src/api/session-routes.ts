import type { ImageIntake } from '../core/attachment.ts';
import { messageBodyLimit, takePostedImages } from './posted-images.ts';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { PatchbayError } from '../core/errors.ts';
import { checkRepoInput } from '../git/repo-input.ts';
import type { EventBus } from '../sessions/notify/event-bus.ts';
import type { SessionService } from '../sessions/inbound/session-service.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';
import { summaryEventTypes } from '../sessions/store/session-summaries.ts';
import { actorFrom, CreateSessionBody, DiffQuery, ListQuery, SendMessageBody, StopBody } from './api-schemas.ts';
import type { SessionDetail, SessionDiff, SessionList } from './api-types.ts';
import { registerApprovalRoutes } from './approval-routes.ts';
import { registerEgressRoutes } from './egress-routes.ts';
import { readSessionDiff } from './session-diff.ts';
import { streamNotices } from './event-stream.ts';
import { registerSessionEventRoutes } from './session-event-routes.ts';
import { sessionCost } from './session-cost.ts';
import type { ApiServer } from './server.ts';
import { threadLink } from './thread-links.ts';

export type SessionRoutesDeps = {
  service: Pick<SessionService, 'start' | 'sendMessage' | 'stop' | 'answerApproval' | 'allowEgress' | 'revokeEgress'>;
  store: Pick<
    SessionStore,
    'summaries' | 'repos' | 'usageByModel' | 'eventPage' | 'get' | 'list' | 'threads' | 'events' | 'children'
  >;
  bus: Pick<EventBus, 'subscribe' | 'subscribeLive'>;
  log: Logger;
  publicUrl?: string;
  keepAliveMs: number;
  githubWebUrl: string;
  /** Where the git mirrors are; without it the diff route answers that there is no diff. */
  dataDir?: string;
  /** Fetches a repository into the mirror when the pushed commits are not there yet. */
  refreshMirror?: (repo: string, signal: AbortSignal) => Promise<void>;
  /** Accept a path on the server's disk as `repo`; otherwise only git URLs. */
  allowLocalRepos: boolean;
  /** Takes in the pictures of messages sent from the page; without it such a message is refused. */
  imageIntake?: ImageIntake | undefined;
};

type IdParams = { Params: { id: string } };

/** REST routes and the event stream under /api/sessions. */
export function registerSessionRoutes(app: ApiServer, deps: SessionRoutesDeps): void {
  const { store, bus, log } = deps;
  const openStreams = new Set<() => void>();

  // Open event streams would otherwise hold app.close() until every client leaves.
  app.addHook('preClose', async () => {
    for (const close of openStreams) close();
  });

  const mustGet = (id: string) => getOrNotFound(store, id);

  app.post('/api/sessions', async (request, reply) => reply.code(201).send(await createSession(deps, request)));

  app.get('/api/sessions', async (request): Promise<SessionList> => listSessions(deps, request));

  // Notices of changes to any session, for the live list; the list re-reads what it shows.
  app.get('/api/sessions-stream', async (_request, reply) => {
    reply.hijack();
    const close = streamNotices(reply.raw, { bus, types: summaryEventTypes, keepAliveMs: deps.keepAliveMs });
    openStreams.add(close);
    reply.raw.on('close', () => openStreams.delete(close));
    return reply;
  });

  app.get<IdParams>('/api/sessions/:id', async (request): Promise<SessionDetail> => {
    const session = await mustGet(request.params.id);
    const [threads, usage, children, parent] = await Promise.all([
      store.threads(session.id),
      store.usageByModel(session.id),
      store.children(session.id),
      session.parentId ? store.get(session.parentId) : undefined,
    ]);
    return {
      ...session,
      threads: threads.map((t) => threadLink(t, { githubWebUrl: deps.githubWebUrl })),
      cost: sessionCost(usage),
      url: sessionUrl(deps, request, session.id),
      children,
      parent: parent ? { id: parent.id, title: parent.title } : null,
    };
  });

  app.get<IdParams>('/api/sessions/:id/diff', async (request): Promise<SessionDiff> => {
    const query = DiffQuery.parse(request.query);
    const session = await mustGet(request.params.id);
    if (!deps.dataDir) return { state: 'none', reason: 'this server has no git mirrors to read diffs from' };
    return readSessionDiff(session, {
      store,
      dataDir: deps.dataDir,
      ...(deps.refreshMirror && { refreshMirror: deps.refreshMirror }),
      ...(query.commit && { commit: query.commit }),
      signal: AbortSignal.timeout(60_000),
    });
  });

  registerSessionEventRoutes(app, { store, bus, log, keepAliveMs: deps.keepAliveMs, mustGet, openStreams });
  registerSessionCommands(app, deps);
  registerApprovalRoutes(app, deps.service);
  registerEgressRoutes(app, deps.service);
}

/** A session's page, at PUBLIC_URL or else the host the request came to. */
function sessionUrl(deps: Pick<SessionRoutesDeps, 'publicUrl'>, request: FastifyRequest, id: string): string {
  const base = deps.publicUrl?.replace(/\/+$/, '') ?? `${request.protocol}://${request.host}`;
  return `${base}/sessions/${encodeURIComponent(id)}`;
}

async function getOrNotFound(store: Pick<SessionStore, 'get'>, id: string) {
  const session = await store.get(id);
  if (!session) throw new PatchbayError('not_found', `session ${id} does not exist`);
  return session;
}

/** POST /api/sessions: starts a session on a web thread. */
async function createSession(deps: SessionRoutesDeps, request: FastifyRequest) {
  const body = CreateSessionBody.parse(request.body);
  // Before any session exists: a bad repository is this request's 400, not a failed session.
  await checkRepoInput(
    body.repo,
    deps.allowLocalRepos
      ? 'absolute'
      : {
          refused: `repo must be a git URL (https://…, ssh://…, git@host:owner/repo): ${JSON.stringify(body.repo)} is a path on the server's disk, which the API accepts only with PATCHBAY_ALLOW_LOCAL_REPOS=true (the CLI always can)`,
        },
  );
  const result = await deps.service.start({
    thread: { source: 'web' },
    actor: actorFrom(body.author),
    text: body.prompt,
    repo: body.repo,
    ...(body.baseBranch && { baseBranch: body.baseBranch }),
  });
  if (result.kind !== 'started') throw new PatchbayError('internal', `unexpected start result ${result.kind}`);
  const { session } = result;
  return { id: session.id, status: session.status, url: sessionUrl(deps, request, session.id) };
}

/** GET /api/sessions: the newest sessions (by status and repository), with every repository for the filter. */
async function listSessions(deps: SessionRoutesDeps, request: FastifyRequest): Promise<SessionList> {
  const query = ListQuery.parse(request.query);
  const [rows, repos] = await Promise.all([
    deps.store.summaries({
      limit: query.limit ?? 50,
      ...(query.status && { status: query.status }),
      ...(query.repo && { repo: query.repo }),
    }),
    deps.store.repos(),
  ]);
  const sessions = rows.map((row) => ({
    id: row.id,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    status: row.status,
    repo: row.repo,
    title: row.title,
    requester: row.requester,
    branch: row.branch,
    surfaces: row.surfaces,
    prUrl: row.prUrl,
    checks: row.checks,
    url: sessionUrl(deps, request, row.id),
    parentId: row.parentId,
  }));
  return { sessions, repos };
}

/** A person's message to a session, and a stop. */
function registerSessionCommands(app: ApiServer, deps: Pick<SessionRoutesDeps, 'service' | 'imageIntake'>): void {
  const { service } = deps;
  const messageOptions = { bodyLimit: messageBodyLimit(deps.imageIntake) };
  app.post<IdParams>('/api/sessions/:id/messages', messageOptions, async (request, reply) => {
    const body = SendMessageBody.parse(request.body);
    const attachments = await takePostedImages(deps.imageIntake, request.params.id, body.images);
    const actor = actorFrom(body.author);
    const result = await service.sendMessage(request.params.id, actor, body.text, body.questionId, attachments);
    const status = 'session' in result ? result.session.status : undefined;
    return reply.code(202).send({ id: request.params.id, status });
  });

  app.post<IdParams>('/api/sessions/:id/stop', async (request, reply) => {
    const body = StopBody.parse(request.body ?? undefined);
    const result = await service.stop(request.params.id, actorFrom(body?.author));
    if (result.kind === 'not-running') {
      return reply.code(409).send({
        error: 'not_running',
        message: `session is ${result.session.status}, so there is nothing to stop`,
        status: result.session.status,
      });
    }
    const status = 'session' in result ? result.session.status : undefined;
    return reply.code(202).send({ id: request.params.id, status });
  });
}
