/** The typed client of Patchbay's HTTP API. Types come from the server's own modules. */
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
import type { PageSignInProvider } from '../../src/core/page-sign-in.ts';
import type { SessionStatus } from '../../src/core/session-status.ts';

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

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    // The server refuses state-changing browser requests without this header (another site's page
    // cannot add it without a CORS preflight the server never grants).
    headers: { 'x-patchbay-request': '1', ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (response.status === 204) return undefined as T;
  const data = (await response.json().catch(() => ({}))) as {
    message?: string;
    error?: string;
    issues?: { message: string }[];
  };
  if (response.status === 401) dispatchEvent(new Event('patchbay:unauthorized'));
  if (!response.ok) {
    const detail = data.message ?? data.issues?.map((i) => i.message).join('; ') ?? data.error ?? response.statusText;
    throw new ApiError(response.status, detail);
  }
  return data as T;
}

export const api = {
  auth: () => request<{ required: boolean; signedIn: boolean; providers: PageSignInProvider[] }>('GET', '/api/auth'),
  signIn: (token: string) => request<void>('POST', '/api/auth', { token }),
  signOut: () => request<void>('DELETE', '/api/auth'),
  list: (filter: { status?: SessionStatus | undefined; repo?: string | undefined }) => {
    const query = new URLSearchParams();
    if (filter.status) query.set('status', filter.status);
    if (filter.repo) query.set('repo', filter.repo);
    const text = query.toString();
    return request<SessionList>('GET', `/api/sessions${text ? `?${text}` : ''}`);
  },
  session: (id: string) => request<SessionDetail>('GET', `/api/sessions/${encodeURIComponent(id)}`),
  /** The `limit` events before seq `before` (the newest without it), with the cursor of the page before. */
  events: (id: string, page: { before?: number | null; limit: number; types?: readonly SessionEventType[] }) => {
    const query = new URLSearchParams({ limit: String(page.limit) });
    if (page.before) query.set('before', String(page.before));
    if (page.types) query.set('types', page.types.join(','));
    return request<EventPage>('GET', `/api/sessions/${encodeURIComponent(id)}/events?${query}`);
  },
  diff: (id: string, commit?: string) =>
    request<SessionDiff>(
      'GET',
      `/api/sessions/${encodeURIComponent(id)}/diff${commit ? `?commit=${encodeURIComponent(commit)}` : ''}`,
    ),
  start: (body: { repo: string; prompt: string; baseBranch?: string; author?: Author }) =>
    request<{ id: string; status: SessionStatus; url: string }>('POST', '/api/sessions', body),
  send: (id: string, body: { text: string; questionId?: string; author?: Author }) =>
    request<{ id: string; status?: SessionStatus }>('POST', `/api/sessions/${encodeURIComponent(id)}/messages`, body),
  knowledge: (repo: string) => request<RepoKnowledge>('GET', `/api/repos/${encodeURIComponent(repo)}/knowledge`),
  saveKnowledge: (repo: string, document: KnowledgeDocument, author?: Author) =>
    request<RepoKnowledge>('PUT', `/api/repos/${encodeURIComponent(repo)}/knowledge`, {
      document,
      ...(author && { author: { name: author.name } }),
    }),
  insights: (filter: InsightsFilter) => request<InsightsReport>('GET', `/api/insights?${new URLSearchParams(filter)}`),
  /** A decision on a held command (the session page's Approve once / Deny). */
  decide: (
    id: string,
    requestId: string,
    body: { decision: 'approved' | 'denied'; reason?: string; author?: Author },
  ) =>
    request<{ id: string; status?: SessionStatus }>(
      'POST',
      `/api/sessions/${encodeURIComponent(id)}/approvals/${encodeURIComponent(requestId)}`,
      body,
    ),
  stop: (id: string, author?: Author) =>
    request<{ id: string; status?: SessionStatus }>(
      'POST',
      `/api/sessions/${encodeURIComponent(id)}/stop`,
      author ? { author } : {},
    ),
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
