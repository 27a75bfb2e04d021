/**
 * The typed client of Patchbay's HTTP API. Types come from the server's own modules; every answer
 * is parsed with its schema (api-responses.ts) before the page uses it.
 */
import type { z } from 'zod';
import type {
  EventPage,
  KnowledgeDocument,
  RepoKnowledge,
  SessionDetail,
  SessionDiff,
  SessionList,
} from '../../src/api/api-types.ts';
import type { Grouping, InsightsReport } from '../../src/api/insights-report.ts';
import type { SessionEventType } from '../../src/core/events.ts';
import type { SessionStatus } from '../../src/core/session-status.ts';
import {
  AuthState,
  EgressAllowed,
  EgressRevoked,
  ErrorBody,
  EventPageSchema,
  InsightsReportSchema,
  RepoKnowledgeSchema,
  SessionAck,
  SessionDetailSchema,
  SessionDiffSchema,
  SessionListSchema,
  StartedSession,
} from './api-responses.ts';

export type { KnowledgeDocument, RepoKnowledge, SessionDetail, SessionDiff, SessionList };

export type Author = { name: string; email?: string };

/** The Insights page's period (dates, `to` exclusive) and grouping. */
export type InsightsFilter = { from: string; to: string; groupBy: Grouping };

/** An API answer that was not 2xx, with the server's message when it sent one. */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The server's answer was 2xx but not what the page expects: the page shows this, not a part of it. */
export class UnexpectedAnswer extends Error {
  constructor(method: string, path: string, error: z.ZodError) {
    const where = (issue: z.core.$ZodIssue) => (issue.path.length ? `${issue.path.join('.')}: ` : '');
    const first = error.issues[0];
    super(
      `The server's answer to ${method} ${path.split('?')[0]} is not what this page expects` +
        (first ? ` (${where(first)}${first.message})` : '') +
        '; reload the page, or check that the page and the server are the same version.',
    );
    this.name = 'UnexpectedAnswer';
  }
}

/** Sends a request; resolves to its answer's body (undefined for 204), throwing ApiError when it is not 2xx. */
async function send(method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    // The server refuses state-changing browser requests without this header (another site's page
    // cannot add it without a CORS preflight the server never grants).
    headers: { 'x-patchbay-request': '1', ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (response.status === 204) return undefined;
  const data: unknown = await response.json().catch(() => ({}));
  if (response.status === 401) dispatchEvent(new Event('patchbay:unauthorized'));
  if (!response.ok) {
    const error = ErrorBody.parse(data);
    const detail =
      error.message ?? error.issues?.map((i) => i.message).join('; ') ?? error.error ?? response.statusText;
    throw new ApiError(response.status, detail);
  }
  return data;
}

/** Sends a request and parses its answer with `schema` (UnexpectedAnswer when it does not parse). */
async function request<T>(schema: z.ZodType<T>, method: string, path: string, body?: unknown): Promise<T> {
  const parsed = schema.safeParse(await send(method, path, body));
  if (!parsed.success) throw new UnexpectedAnswer(method, path, parsed.error);
  return parsed.data;
}

export const api = {
  auth: () => request(AuthState, 'GET', '/api/auth'),
  signIn: async (token: string) => void (await send('POST', '/api/auth', { token })),
  signOut: async () => void (await send('DELETE', '/api/auth')),
  list: (filter: { status?: SessionStatus | undefined; repo?: string | undefined }): Promise<SessionList> => {
    const query = new URLSearchParams();
    if (filter.status) query.set('status', filter.status);
    if (filter.repo) query.set('repo', filter.repo);
    const text = query.toString();
    return request(SessionListSchema, 'GET', `/api/sessions${text ? `?${text}` : ''}`);
  },
  session: (id: string): Promise<SessionDetail> =>
    request(SessionDetailSchema, 'GET', `/api/sessions/${encodeURIComponent(id)}`),
  /** The `limit` events before seq `before` (the newest without it), with the cursor of the page before. */
  events: (
    id: string,
    page: { before?: number | null; limit: number; types?: readonly SessionEventType[] },
  ): Promise<EventPage> => {
    const query = new URLSearchParams({ limit: String(page.limit) });
    if (page.before) query.set('before', String(page.before));
    if (page.types) query.set('types', page.types.join(','));
    return request(EventPageSchema, 'GET', `/api/sessions/${encodeURIComponent(id)}/events?${query}`);
  },
  diff: (id: string, commit?: string): Promise<SessionDiff> =>
    request(
      SessionDiffSchema,
      'GET',
      `/api/sessions/${encodeURIComponent(id)}/diff${commit ? `?commit=${encodeURIComponent(commit)}` : ''}`,
    ),
  start: (body: { repo: string; prompt: string; baseBranch?: string; author?: Author }) =>
    request(StartedSession, 'POST', '/api/sessions', body),
  send: (
    id: string,
    body: { text: string; questionId?: string; author?: Author; images?: { name: string; data: string }[] },
  ) => request(SessionAck, 'POST', `/api/sessions/${encodeURIComponent(id)}/messages`, body),
  knowledge: (repo: string): Promise<RepoKnowledge> =>
    request(RepoKnowledgeSchema, 'GET', `/api/repos/${encodeURIComponent(repo)}/knowledge`),
  saveKnowledge: (repo: string, document: KnowledgeDocument, author?: Author): Promise<RepoKnowledge> =>
    request(RepoKnowledgeSchema, 'PUT', `/api/repos/${encodeURIComponent(repo)}/knowledge`, {
      document,
      ...(author && { author: { name: author.name } }),
    }),
  insights: (filter: InsightsFilter): Promise<InsightsReport> =>
    request(InsightsReportSchema, 'GET', `/api/insights?${new URLSearchParams(filter)}`),
  /** A decision on a held command (the session page's Approve once / Deny). */
  decide: (
    id: string,
    requestId: string,
    body: { decision: 'approved' | 'denied'; reason?: string; author?: Author },
  ) =>
    request(
      SessionAck,
      'POST',
      `/api/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(requestId)}`,
      body,
    ),
  /** A host the session's sandbox was refused, allowed for the session or its repository. */
  allowEgress: (id: string, body: { host: string; port?: number; scope: 'session' | 'repository'; author?: Author }) =>
    request(EgressAllowed, 'POST', `/api/sessions/${encodeURIComponent(id)}/egress-allow`, body),
  /** A repository's allowed host removed (the Repo tab); new connections are refused again. */
  revokeEgress: (repo: string, body: { host: string; port?: number; author?: Author }) =>
    request(EgressRevoked, 'POST', `/api/repos/${encodeURIComponent(repo)}/egress-allow/revoke`, body),
  stop: (id: string, author?: Author) =>
    request(SessionAck, 'POST', `/api/sessions/${encodeURIComponent(id)}/stop`, author ? { author } : {}),
};

const NAME_KEY = 'patchbay.name';

/** The name people sign their messages with on this browser (not a secret: kept in localStorage). */
export function savedAuthor(): Author | undefined {
  const name = localStorage.getItem(NAME_KEY)?.trim();
  return name ? { name } : undefined;
}

export function saveAuthorName(name: string): void {
  if (name.trim()) localStorage.setItem(NAME_KEY, name.trim());
  else localStorage.removeItem(NAME_KEY);
}
