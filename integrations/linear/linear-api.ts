import { LinearClient, LinearError, parseLinearError, type LinearDocument } from '@linear/sdk';

type AgentActivityCreateInput = LinearDocument.AgentActivityCreateInput;
type AgentSessionUpdateInput = LinearDocument.AgentSessionUpdateInput;
import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';

/** Content of an activity Patchbay posts (Linear validates these shapes server-side). */
export type ActivityContent =
  | { type: 'thought' | 'elicitation' | 'response' | 'error'; body: string }
  | { type: 'action'; action: string; parameter: string; result?: string };

export type Activity = {
  content: ActivityContent;
  /** Only thoughts and actions may be ephemeral. */
  ephemeral?: boolean;
  /** A select elicitation's choices. */
  options?: { value: string; label?: string }[];
  /** A stable UUID, so a repeated delivery does not post twice. */
  id?: string;
};

export type PlanStep = { content: string; status: 'pending' | 'inProgress' | 'completed' | 'canceled' };

export type IssueForWork = {
  id: string;
  identifier: string;
  stateType: string;
  delegateId: string | null;
  /** Who wrote the issue, when Linear knows (an integration may have made it). */
  authorName: string | null;
  teamKey: string;
  /** The team's workflow states, by position. */
  states: { id: string; type: string; position: number }[];
  attachmentUrls: string[];
};

const issueQuery = `query patchbayIssue($id: String!) {
  issue(id: $id) {
    id
    identifier
    state { id type }
    delegate { id }
    creator { name }
    team { id key states { nodes { id type position } } }
    attachments { nodes { url } }
  }
}`;

type IssueQueryResult = {
  issue: {
    id: string;
    identifier: string;
    state: { id: string; type: string };
    delegate: { id: string } | null;
    creator: { name: string } | null;
    team: { id: string; key: string; states: { nodes: { id: string; type: string; position: number }[] } };
    attachments: { nodes: { url: string }[] };
  };
};

export type LinearApi = {
  postActivity(agentSessionId: string, activity: Activity, signal?: AbortSignal): Promise<void>;
  updateSession(
    agentSessionId: string,
    input: { externalUrls?: { label: string; url: string }[]; plan?: PlanStep[] },
    signal?: AbortSignal,
  ): Promise<void>;
  issue(issueId: string): Promise<IssueForWork>;
  moveIssue(issueId: string, stateId: string): Promise<void>;
  suggestRepositories(
    issueId: string,
    agentSessionId: string,
    candidates: { hostname: string; repositoryFullName: string }[],
  ): Promise<{ repositoryFullName: string; confidence: number }[]>;
  viewerId(): Promise<string>;
  /** The GitHub account (numeric id) a person linked in Linear, or undefined when they linked none. */
  gitHubUserId(userId: string): Promise<string | undefined>;
};

/**
 * Where the SDK client comes from when tokens expire: the client for the workspace's current token
 * (refreshed first when it is due), and after Linear refused a client's token, a client with a
 * fresh one, or undefined when there is none to be had (nothing to refresh with).
 */
export type LinearClientSource = {
  current(signal?: AbortSignal): Promise<LinearClient>;
  refused(client: LinearClient, signal?: AbortSignal): Promise<LinearClient | undefined>;
};

const retryableTypes = new Set(['Ratelimited', 'NetworkError', 'InternalError', 'LockTimeout']);

/**
 * Whether a call failed in the network before Linear answered (the connection refused, reset or
 * dropped): the SDK throws fetch's own `TypeError: fetch failed` for these, bare or as the `raw` of
 * an unknown-type LinearError, so without this a dropped connection would never be tried again.
 */
function failedInTheNetwork(raw: unknown): boolean {
  const cause = raw instanceof LinearError ? raw.raw : raw;
  return cause instanceof TypeError && cause.message === 'fetch failed';
}

/**
 * The calls Patchbay makes to Linear, through `@linear/sdk`. Rate limits, network failures and
 * Linear's internal errors are retried a few times (honouring `retry-after` up to 10 s); a token
 * Linear refuses (it expired, about a day after it was issued) is refreshed through the client
 * source and the call made once more. Every failure is logged with its GraphQL errors and thrown as
 * a PatchbayError (retryable when a later try may pass, so the caller's queue tries again).
 */
export function createLinearApi(deps: {
  client: LinearClient | LinearClientSource;
  log: Logger;
  sleep?: (ms: number) => Promise<void>;
  attempts?: number;
}): LinearApi {
  const caller: LinearCaller = {
    source: deps.client instanceof LinearClient ? fixedClient(deps.client) : deps.client,
    log: deps.log,
    sleep: deps.sleep ?? ((ms: number) => new Promise((resolve) => setTimeout(resolve, ms))),
    attempts: deps.attempts ?? 4,
  };
  return {
    postActivity: (agentSessionId, activity, signal) => postActivity(caller, agentSessionId, activity, signal),
    async updateSession(agentSessionId, input, signal) {
      await call(
        caller,
        'agentSessionUpdate',
        (client) => client.updateAgentSession(agentSessionId, input as AgentSessionUpdateInput),
        signal,
      );
    },
    issue: (issueId) => issueForWork(caller, issueId),
    async moveIssue(issueId, stateId) {
      await call(caller, 'issueUpdate', (client) => client.updateIssue(issueId, { stateId }));
    },
    async suggestRepositories(issueId, agentSessionId, candidates) {
      if (candidates.length === 0) return [];
      const payload = await call(caller, 'issueRepositorySuggestions', (client) =>
        client.issueRepositorySuggestions(candidates, issueId, { agentSessionId }),
      );
      return payload.suggestions.map((s) => ({ repositoryFullName: s.repositoryFullName, confidence: s.confidence }));
    },
    async viewerId() {
      const { viewer } = await call(
        caller,
        'viewer',
        request<{ viewer: { id: string } }>('query patchbayViewer { viewer { id } }', {}),
      );
      return viewer.id;
    },
    async gitHubUserId(userId) {
      const { user } = await call(
        caller,
        'user',
        request<{ user: { gitHubUserId: string | null } }>(
          'query patchbayUserGitHub($id: String!) { user(id: $id) { id gitHubUserId } }',
          { id: userId },
        ),
      );
      return user.gitHubUserId ?? undefined;
    },
  };
}

/** What every call to Linear goes through: where its client comes from, the log, the retry policy. */
type LinearCaller = {
  source: LinearClientSource;
  log: Logger;
  sleep: (ms: number) => Promise<void>;
  attempts: number;
};

/** One call to Linear, with the token refreshed once when refused and retryable failures retried. */
async function call<T>(
  caller: LinearCaller,
  what: string,
  run: (client: LinearClient) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const { source, log } = caller;
  let client = await source.current(signal);
  let refreshed = false;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run(client);
    } catch (raw) {
      const error = raw instanceof LinearError ? raw : parseLinearError(raw as Parameters<typeof parseLinearError>[0]);
      const type = failedInTheNetwork(raw) ? 'NetworkError' : (error.type ?? 'Unknown');
      if (type === 'AuthenticationError' && !refreshed) {
        // Once per call: a token refused right after a refresh is not going to be taken on a retry.
        refreshed = true;
        const next = await source.refused(client, signal);
        if (next) {
          log.info({ call: what }, 'Linear refused the access token; refreshed it and trying again');
          client = next;
          attempt -= 1;
          continue;
        }
      }
      const graphql = error.errors?.map((e) => ({ type: e.type, message: e.message }));
      const retryable = retryableTypes.has(type);
      log.warn(
        { call: what, linearErrorType: type, status: error.status, errors: graphql, attempt },
        `Linear ${what} failed: ${error.message}`,
      );
      if (!retryable || attempt >= caller.attempts || signal?.aborted)
        throw linearFailure(what, type, error, retryable);
      const retryAfter = (error as { retryAfter?: number }).retryAfter;
      await caller.sleep(retryAfter !== undefined ? Math.min(retryAfter * 1000, 10_000) : 250 * 2 ** (attempt - 1));
    }
  }
}

/** A failed call as a coded error: refused (unauthorized), worth another try later (internal), or not. */
function linearFailure(what: string, type: string, error: LinearError, retryable: boolean): PatchbayError {
  const code =
    type === 'AuthenticationError' || type === 'Forbidden' ? 'unauthorized' : retryable ? 'internal' : 'invalid_input';
  return new PatchbayError(code, `Linear ${what} failed (${type}): ${error.message}`, { cause: error, retryable });
}

function request<T>(query: string, variables: Record<string, unknown>): (client: LinearClient) => Promise<T> {
  // The SDK's own GraphQL client: same endpoint, headers and error parsing as its typed methods.
  return (client) => client.client.request<T, Record<string, unknown>>(query, variables);
}

/** Posts an activity; a repeated post of an id Linear already holds in this session counts as done. */
async function postActivity(
  caller: LinearCaller,
  agentSessionId: string,
  activity: Activity,
  signal?: AbortSignal,
): Promise<void> {
  const input: AgentActivityCreateInput = {
    agentSessionId,
    content: activity.content,
    ...(activity.id && { id: activity.id }),
    ...(activity.ephemeral && { ephemeral: true }),
    ...(activity.options?.length && {
      signal: 'select' as NonNullable<AgentActivityCreateInput['signal']>,
      signalMetadata: { options: activity.options },
    }),
  };
  try {
    await call(
      caller,
      `agentActivityCreate (${activity.content.type})`,
      (client) => client.createAgentActivity(input),
      signal,
    );
  } catch (error) {
    // A repeated delivery re-posts activities with the ids they already have: if Linear holds
    // that id in this session, it is done. Asked by id, not read from the refusal's wording.
    if (activity.id && (await holdsActivity(caller, agentSessionId, activity.id, signal))) return;
    throw error;
  }
}

/** Whether Linear holds the activity `id` in this agent session (a create answered with an error may still have landed). */
async function holdsActivity(
  caller: LinearCaller,
  agentSessionId: string,
  id: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const found = await call(
    caller,
    'agentActivity',
    request<{ agentActivity: { id: string; agentSession: { id: string } } }>(
      'query patchbayActivity($id: String!) { agentActivity(id: $id) { id agentSession { id } } }',
      { id },
    ),
    signal,
  ).catch(() => undefined);
  return found?.agentActivity.agentSession.id === agentSessionId;
}

/** The issue as the interpreter works from it: its state, delegate, author, team states and attachments. */
async function issueForWork(caller: LinearCaller, issueId: string): Promise<IssueForWork> {
  const { issue } = await call(caller, 'issue', request<IssueQueryResult>(issueQuery, { id: issueId }));
  return {
    id: issue.id,
    identifier: issue.identifier,
    stateType: issue.state.type,
    delegateId: issue.delegate?.id ?? null,
    authorName: issue.creator?.name ?? null,
    teamKey: issue.team.key,
    states: [...issue.team.states.nodes].sort((a, b) => a.position - b.position),
    attachmentUrls: issue.attachments.nodes.map((a) => a.url),
  };
}

/** A client whose token cannot be refreshed (LINEAR_ACCESS_TOKEN, LINEAR_API_KEY, a test's). */
function fixedClient(client: LinearClient): LinearClientSource {
  return { current: async () => client, refused: async () => undefined };
}

/** An SDK client for a token: an OAuth access token (Bearer) or a personal API key. */
export function linearClient(apiUrl: string, token: { accessToken: string } | { apiKey: string }): LinearClient {
  return new LinearClient({ apiUrl, ...token });
}
