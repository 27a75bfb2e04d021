import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { buildSchema, execute, parse, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import { listenOnLoopback } from '../loopback.ts';
import { createFakeLinearOAuth } from './fake-linear-oauth.ts';
import type { Chaos } from '../chaos.ts';
import { dropBeforeAnswer, networkFault } from '../chaos-faults.ts';

let cachedSchema: GraphQLSchema | undefined;

/** Linear's published schema (see README.md beside this file), built once per process. */
export function linearSchema(): GraphQLSchema {
  cachedSchema ??= buildSchema(readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8'));
  return cachedSchema;
}

export type FakeActivity = {
  id: string;
  agentSessionId: string;
  content: Record<string, unknown>;
  ephemeral?: boolean;
  signal?: string;
  signalMetadata?: Record<string, unknown>;
  at: number;
};
export type FakeState = {
  id: string;
  name: string;
  type: 'triage' | 'backlog' | 'unstarted' | 'started' | 'completed' | 'canceled';
  position: number;
};
export type FakeTeam = { id: string; key: string; name: string; states: FakeState[] };
export type FakeIssue = {
  id: string;
  identifier: string;
  title: string;
  description: string | null;
  teamId: string;
  stateId: string;
  delegateId: string | null;
  /** URLs attached to the issue (a linked pull request, say). */
  attachments: string[];
  creator: { id: string; name: string } | null;
};
export type FakeAgentSession = {
  id: string;
  issueId: string;
  externalUrls: { label: string; url: string }[];
  plan: unknown;
};
export type Suggestion = { repositoryFullName: string; hostname: string; confidence: number };

const activityTypes = new Set(['thought', 'action', 'elicitation', 'response', 'error']);
const planStatuses = new Set(['pending', 'inProgress', 'completed', 'canceled']);
const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

class Refusal extends Error {
  readonly type: string;
  constructor(message: string, type = 'invalid input') {
    super(message);
    this.type = type;
  }
}

/** Linear's answer to a request whose token it does not take (unknown, expired or revoked), with HTTP 401. */
export const authenticationError = {
  errors: [
    {
      message: 'Authentication required, not authenticated',
      extensions: {
        type: 'authentication error',
        code: 'AUTHENTICATION_ERROR',
        userPresentableMessage: 'You need to authenticate to access this operation.',
      },
    },
  ],
};

/**
 * A loopback Linear GraphQL API. Every document is parsed and validated against Linear's published
 * schema and executed with `graphql`, so the SDK gets answers shaped exactly like its queries ask.
 * Agent activities are checked the way Linear documents it validates them server-side (content by
 * type, `parameter` a string on actions, `ephemeral` only on thoughts and actions, `select` options
 * only on elicitations). Whatever it refused is kept in `refused`; tests assert it stays empty.
 *
 * Tokens expire and refresh tokens rotate as Linear's do (fake-linear-oauth.ts); a token it does
 * not take gets HTTP 401 with Linear's authentication error.
 */
export async function startFakeLinear(
  options: {
    accessToken?: string;
    apiKey?: string;
    appUserId?: string;
    organizationId?: string;
    tokenLifetimeSeconds?: number;
    /**
     * Transient faults at a rate (chaos.ts), on the GraphQL API and the OAuth token endpoint: 429
     * with Retry-After or a 503 (as `failNext` answers them), an answer held back 1 to 2 s, or the
     * connection dropped before any answer, nothing done (chaos-faults.ts).
     */
    chaos?: Chaos;
  } = {},
) {
  const schema = linearSchema();
  const accessToken = options.accessToken ?? 'lin_oauth_fake_access_token';
  const apiKey = options.apiKey;
  const appUserId = options.appUserId ?? 'a11ce000-0000-4000-8000-00000000a99e';
  const organizationId = options.organizationId ?? 'bc6842cc-0000-4000-8000-000000000001';
  const teams = new Map<string, FakeTeam>();
  const issues = new Map<string, FakeIssue>();
  const sessions = new Map<string, FakeAgentSession>();
  const activities: FakeActivity[] = [];
  const sessionUpdates: { id: string; input: Record<string, unknown> }[] = [];
  const issueUpdates: { id: string; input: Record<string, unknown> }[] = [];
  const refused: { operation: string; status: number; message: string }[] = [];
  const oauth = createFakeLinearOAuth({
    staticTokens: [`Bearer ${accessToken}`, ...(apiKey === undefined ? [] : [apiKey])],
    tokenLifetimeSeconds: options.tokenLifetimeSeconds ?? 86_399,
    refused,
    ...(options.chaos && { chaos: options.chaos }),
  });
  const operations: string[] = [];
  const waiters = new Set<() => void>();
  const documents = new Map<string, DocumentNode>();
  let failures: { status: number; count: number; retryAfterSeconds?: number } | undefined;
  /** Operations Linear refuses on every call (by GraphQL operation name), with the error it answers. */
  const failing = new Map<string, string>();
  let suggest: (issueId: string, candidates: { hostname: string; repositoryFullName: string }[]) => Suggestion[] =
    () => [];

  const notify = () => {
    for (const waiter of waiters) waiter();
  };

  function activityCreate({ input }: { input: Record<string, unknown> }) {
    const agentSessionId = String(input.agentSessionId);
    if (!sessions.has(agentSessionId))
      throw new Refusal(`Entity not found: AgentSession ${agentSessionId}`, 'entity not found');
    const content = input.content as Record<string, unknown>;
    if (!content || typeof content !== 'object' || Array.isArray(content))
      throw new Refusal('content must be an object');
    const type = content.type;
    if (typeof type !== 'string' || !activityTypes.has(type))
      throw new Refusal(`content.type ${JSON.stringify(type)} is not an agent activity type an agent may create`);
    const keys = Object.keys(content).filter((k) => k !== 'type');
    if (type === 'action') {
      if (typeof content.action !== 'string' || content.action.length === 0)
        throw new Refusal('action content needs a non-empty string action');
      if (typeof content.parameter !== 'string')
        throw new Refusal('action content needs parameter as a string ("" when empty)');
      if (content.result !== undefined && typeof content.result !== 'string')
        throw new Refusal('action result must be a string');
      const extra = keys.filter((k) => !['action', 'parameter', 'result'].includes(k));
      if (extra.length) throw new Refusal(`action content has unknown fields ${extra.join(', ')}`);
    } else {
      if (typeof content.body !== 'string' || content.body.trim().length === 0)
        throw new Refusal(`${type} content needs a non-empty string body`);
      const extra = keys.filter((k) => k !== 'body');
      if (extra.length) throw new Refusal(`${type} content has unknown fields ${extra.join(', ')}`);
    }
    if (input.ephemeral === true && type !== 'thought' && type !== 'action')
      throw new Refusal(`only thought and action activities can be ephemeral, not ${type}`);
    const signal = input.signal as string | null | undefined;
    if (signal === 'stop') throw new Refusal('the stop signal is sent by people, not agents');
    if ((signal === 'select' || signal === 'auth') && type !== 'elicitation')
      throw new Refusal(`the ${signal} signal belongs on an elicitation, not a ${type}`);
    if (signal === 'select') {
      const options = (input.signalMetadata as { options?: unknown } | undefined)?.options;
      if (!Array.isArray(options) || options.length === 0)
        throw new Refusal('a select elicitation needs signalMetadata.options');
      for (const option of options) {
        if (typeof option !== 'object' || option === null || typeof (option as { value?: unknown }).value !== 'string')
          throw new Refusal('each select option needs a string value');
      }
    }
    const id = input.id === undefined || input.id === null ? randomUUID() : String(input.id);
    if (!uuidV4.test(id)) throw new Refusal(`id ${id} is not a UUID v4`);
    // Linear's wording for this is not documented: a client must not depend on it (it looks the id up).
    if (activities.some((a) => a.id === id)) throw new Refusal(`Argument Validation Error: id ${id}`, 'invalid input');
    const activity: FakeActivity = {
      id,
      agentSessionId,
      content,
      ...(typeof input.ephemeral === 'boolean' && { ephemeral: input.ephemeral }),
      ...(signal && { signal }),
      ...(input.signalMetadata ? { signalMetadata: input.signalMetadata as Record<string, unknown> } : {}),
      at: Date.now(),
    };
    activities.push(activity);
    notify();
    return { agentActivity: { id }, lastSyncId: activities.length, success: true };
  }

  function sessionUpdate({ id, input }: { id: string; input: Record<string, unknown> }) {
    const session = sessions.get(id);
    if (!session) throw new Refusal(`Entity not found: AgentSession ${id}`, 'entity not found');
    if (input.externalUrls !== undefined) {
      const urls = input.externalUrls as { label: string; url: string }[];
      for (const u of urls)
        if (!/^https?:\/\//.test(u.url)) throw new Refusal(`external URL ${u.url} is not an http(s) URL`);
      session.externalUrls = urls;
    }
    if (input.plan !== undefined) {
      const plan = input.plan;
      if (!Array.isArray(plan)) throw new Refusal('plan must be a list of {content, status} steps');
      for (const step of plan as Record<string, unknown>[]) {
        if (typeof step?.content !== 'string' || !planStatuses.has(String(step.status)))
          throw new Refusal(
            `plan step ${JSON.stringify(step)} needs content and a status of ${[...planStatuses].join('|')}`,
          );
      }
      session.plan = plan;
    }
    sessionUpdates.push({ id, input });
    notify();
    return { agentSession: { id }, lastSyncId: sessionUpdates.length, success: true };
  }

  function issueUpdate({ id, input }: { id: string; input: Record<string, unknown> }) {
    const issue = issues.get(id);
    if (!issue) throw new Refusal(`Entity not found: Issue ${id}`, 'entity not found');
    if (input.stateId !== undefined) {
      const team = teams.get(issue.teamId)!;
      if (!team.states.some((s) => s.id === input.stateId))
        throw new Refusal(`state ${String(input.stateId)} is not a state of team ${team.key}`);
      issue.stateId = String(input.stateId);
    }
    if (input.delegateId !== undefined) issue.delegateId = input.delegateId === null ? null : String(input.delegateId);
    issueUpdates.push({ id, input });
    notify();
    return { issue: { id }, lastSyncId: issueUpdates.length, success: true };
  }

  function issueView(issue: FakeIssue) {
    const team = teams.get(issue.teamId)!;
    const stateView = (s: FakeState) => ({ id: s.id, name: s.name, type: s.type, position: s.position });
    return {
      id: issue.id,
      identifier: issue.identifier,
      title: issue.title,
      description: issue.description,
      url: `https://linear.app/acme/issue/${issue.identifier}`,
      state: stateView(team.states.find((s) => s.id === issue.stateId)!),
      delegate: issue.delegateId ? { id: issue.delegateId } : null,
      creator: issue.creator,
      team: { id: team.id, key: team.key, name: team.name, states: () => ({ nodes: team.states.map(stateView) }) },
      attachments: () => ({
        nodes: issue.attachments.map((url, i) => ({ id: `${issue.id}-att-${i}`, url, title: url })),
      }),
    };
  }

  /** Linear users by id; `gitHubUserId` is the GitHub account a person linked in Linear (a numeric id). */
  const users = new Map<string, { id: string; name: string; gitHubUserId: string | null }>();

  const root = {
    user: ({ id }: { id: string }) => {
      const user = users.get(id);
      if (!user) throw new Refusal(`Entity not found: User ${id}`, 'entity not found');
      return user;
    },
    agentActivityCreate: activityCreate,
    agentSessionUpdate: sessionUpdate,
    issueUpdate,
    issue: ({ id }: { id: string }) => {
      const issue = issues.get(id) ?? [...issues.values()].find((i) => i.identifier === id);
      if (!issue) throw new Refusal(`Entity not found: Issue ${id}`, 'entity not found');
      return issueView(issue);
    },
    issueRepositorySuggestions: ({
      issueId,
      candidateRepositories,
    }: {
      issueId: string;
      candidateRepositories: { hostname: string; repositoryFullName: string }[];
    }) => {
      if (!issues.has(issueId)) throw new Refusal(`Entity not found: Issue ${issueId}`, 'entity not found');
      return { suggestions: suggest(issueId, candidateRepositories) };
    },
    agentActivity: ({ id }: { id: string }) => {
      const activity = activities.find((a) => a.id === id);
      if (!activity) throw new Refusal(`Entity not found: AgentActivity ${id}`, 'entity not found');
      return {
        id: activity.id,
        agentSession: { id: activity.agentSessionId },
        ephemeral: activity.ephemeral ?? false,
        createdAt: new Date(activity.at).toISOString(),
      };
    },
    viewer: () => ({ id: appUserId, name: 'Patchbay', displayName: 'patchbay' }),
    organization: () => ({ id: organizationId, name: 'Acme' }),
  };

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  }

  function refuse(res: ServerResponse, operation: string, status: number, message: string, type = 'invalid input') {
    refused.push({ operation, status, message });
    send(res, status, { errors: [{ message, extensions: { type, userPresentableMessage: message } }] });
  }

  // Files people uploaded into issues and comments, as uploads.linear.app serves them: to the workspace's token.
  const uploads = new Map<string, { bytes: Uint8Array; mediaType: string }>();
  const uploadDownloads: { path: string; served: boolean }[] = [];
  function serveUpload(req: IncomingMessage, res: ServerResponse) {
    const file = uploads.get(req.url ?? '');
    const served = Boolean(file) && oauth.authorized(req.headers.authorization);
    uploadDownloads.push({ path: req.url ?? '', served });
    if (!served || !file) {
      refused.push({ operation: `GET ${req.url}`, status: file ? 401 : 404, message: 'upload refused' });
      return res.writeHead(file ? 401 : 404, { 'content-type': 'text/plain' }).end('refused');
    }
    res.writeHead(200, { 'content-type': file.mediaType, 'content-length': String(file.bytes.byteLength) });
    return res.end(Buffer.from(file.bytes));
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    if (req.method === 'GET' && req.url?.startsWith('/uploads/')) return serveUpload(req, res);
    if (req.method === 'POST' && req.url === '/oauth/token') return oauth.tokenExchange(req, res);
    if (req.method !== 'POST' || req.url !== '/graphql')
      return refuse(res, `${req.method} ${req.url}`, 404, 'not found');
    if (!oauth.authorized(req.headers.authorization)) {
      refused.push({ operation: 'auth', status: 401, message: authenticationError.errors[0]!.message });
      return send(res, 401, authenticationError);
    }
    if (!String(req.headers['content-type']).startsWith('application/json'))
      return refuse(res, 'content-type', 400, 'content-type must be application/json');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: { query?: unknown; variables?: unknown };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return refuse(res, 'body', 400, 'body is not JSON');
    }
    if (typeof body.query !== 'string') return refuse(res, 'body', 400, 'query must be a string');
    let document = documents.get(body.query);
    if (!document) {
      try {
        document = parse(body.query);
      } catch (error) {
        return refuse(res, 'parse', 400, `GraphQL syntax error: ${(error as Error).message}`, 'graphql error');
      }
      const problems = validate(schema, document);
      if (problems.length > 0)
        return refuse(res, 'validate', 400, problems.map((p) => p.message).join('; '), 'graphql error');
      documents.set(body.query, document);
    }
    const operation = document.definitions.map((d) => ('name' in d && d.name ? d.name.value : d.kind)).join(',');
    const subject = chaosSubject(body.variables);
    const chaos = options.chaos?.roll('linear', operation, ['rate-limited', 'unavailable'], subject);
    if (!chaos && (await networkFault(options.chaos, 'linear', operation, subject))) return dropBeforeAnswer(res);
    if (chaos && !(failures && failures.count > 0))
      failures = { status: chaos === 'rate-limited' ? 429 : 503, count: 1, retryAfterSeconds: 1 };
    if (failures && failures.count > 0) {
      failures.count -= 1;
      const headers: Record<string, string> =
        failures.retryAfterSeconds === undefined ? {} : { 'retry-after': String(failures.retryAfterSeconds) };
      const type = failures.status === 429 ? 'ratelimited' : 'internal error';
      return send(
        res,
        failures.status,
        {
          errors: [
            { message: failures.status === 429 ? 'Rate limit exceeded' : 'Internal error', extensions: { type } },
          ],
        },
        headers,
      );
    }
    const named = operation.split(',')[0]!;
    const failure = failing.get(named);
    if (failure !== undefined) {
      // As Linear answers a refused mutation: HTTP 200 with a GraphQL error and no data.
      refused.push({ operation: named, status: 200, message: failure });
      return send(res, 200, {
        data: null,
        errors: [
          { message: failure, path: [named], extensions: { type: 'invalid input', userPresentableMessage: failure } },
        ],
      });
    }
    operations.push(operation);
    const result = await execute({
      schema,
      document,
      rootValue: root,
      variableValues: (body.variables ?? {}) as Record<string, unknown>,
    });
    if (result.errors?.length) {
      const first = result.errors[0]!;
      const original = first.originalError;
      const type = original instanceof Refusal ? original.type : 'invalid input';
      refused.push({ operation, status: 200, message: result.errors.map((e) => e.message).join('; ') });
      return send(res, 200, {
        data: result.data ?? null,
        errors: result.errors.map((e) => ({
          message: e.message,
          path: e.path,
          extensions: { type, userPresentableMessage: e.message },
        })),
      });
    }
    send(res, 200, { data: result.data });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      refused.push({ operation: 'server', status: 500, message: String(error) });
      if (!res.headersSent) send(res, 500, { errors: [{ message: 'internal error' }] });
    });
  });
  const { port, close } = await listenOnLoopback(server);

  return {
    apiUrl: `http://127.0.0.1:${port}/graphql`,
    accessToken,
    uploadDownloads,
    /** An upload as Linear links it from an issue or comment (markdown image), on this fake's host. */
    upload(bytes: Uint8Array, mediaType = 'image/png'): string {
      const path = `/uploads/${organizationId}/${randomUUID()}/${randomUUID()}`;
      uploads.set(path, { bytes, mediaType });
      return `http://127.0.0.1:${port}${path}`;
    },
    appUserId,
    organizationId,
    activities,
    sessionUpdates,
    issueUpdates,
    refused,
    operations,
    sessions,
    issues,
    teams,
    /** A person of the workspace, with the GitHub account they linked in Linear's settings, if any. */
    addUser(user: { id: string; name: string; gitHubUserId?: number }) {
      users.set(user.id, { id: user.id, name: user.name, gitHubUserId: user.gitHubUserId?.toString() ?? null });
    },
    /** A person a webhook names becomes a user of the workspace (without a linked GitHub account), unless known. */
    knowUser(user: { id: string; name: string }) {
      if (!users.has(user.id)) users.set(user.id, { id: user.id, name: user.name, gitHubUserId: null });
    },
    addTeam(team: FakeTeam): FakeTeam {
      teams.set(team.id, team);
      return team;
    },
    addIssue(
      issue: Omit<FakeIssue, 'attachments' | 'delegateId' | 'creator'> &
        Partial<Pick<FakeIssue, 'attachments' | 'delegateId' | 'creator'>>,
    ): FakeIssue {
      const full = { attachments: [], delegateId: null, creator: null, ...issue };
      issues.set(issue.id, full);
      return full;
    },
    /** An agent session as Linear makes one when someone delegates or mentions the app. */
    addSession(id: string, issueId: string): FakeAgentSession {
      const session = { id, issueId, externalUrls: [], plan: null };
      sessions.set(id, session);
      return session;
    },
    oauth: { clientId: oauth.clientId, clientSecret: oauth.clientSecret },
    /** Every grant the token endpoint served (installs and refreshes), in order. */
    grants: oauth.grants,
    secretsIssued: oauth.secretsIssued,
    advance: oauth.advance,
    revokeRefreshTokens: oauth.revokeRefreshTokens,
    failTokens: oauth.failTokens,
    loseTokenAnswers: oauth.loseTokenAnswers,
    tokenFaults: oauth.faulted,
    authorize: oauth.authorize,
    setSuggestions(fn: typeof suggest) {
      suggest = fn;
    },
    /** The next `count` requests fail with `status` (429 answers as Linear's rate limit does). */
    failNext(count: number, status = 429, retryAfterSeconds?: number) {
      failures = { status, count, ...(retryAfterSeconds !== undefined && { retryAfterSeconds }) };
    },
    /** Every call of this operation (its GraphQL operation name, e.g. `updateAgentSession`) is refused with `message` until restore(). */
    fail(operation: string, message: string) {
      failing.set(operation, message);
    },
    restore(operation: string) {
      failing.delete(operation);
    },
    activitiesOf(agentSessionId: string): FakeActivity[] {
      return activities.filter((a) => a.agentSessionId === agentSessionId);
    },
    /** Resolves once `check` holds (checked after every change), or rejects after `timeoutMs`. */
    async waitFor<T>(check: () => T | undefined | false, what: string, timeoutMs = 30_000): Promise<T> {
      const first = check();
      if (first) return first;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(
            new Error(
              `fake Linear: timed out waiting for ${what}; activities:\n${activities.map((a) => JSON.stringify(a.content)).join('\n')}\nsession updates: ${JSON.stringify(sessionUpdates)}\nrefused: ${JSON.stringify(refused)}`,
            ),
          );
        }, timeoutMs);
        const waiter = () => {
          const value = check();
          if (!value) return;
          clearTimeout(timer);
          waiters.delete(waiter);
          resolve(value);
        };
        waiters.add(waiter);
      });
    },
    close,
  };
}

export type FakeLinear = Awaited<ReturnType<typeof startFakeLinear>>;

/** What a request concerns, for chaos's record: the agent session an activity is for, else the entity `id` names. */
function chaosSubject(variables: unknown): string | undefined {
  const vars = (variables ?? {}) as { id?: unknown; input?: { agentSessionId?: unknown } };
  const subject = vars.input?.agentSessionId ?? vars.id;
  return typeof subject === 'string' ? subject : undefined;
}
