import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';

// The list endpoints a poller reads (GitHub's REST answers for repository-wide comments, an issue,
// the check suites of a commit, an installation's repositories), and GitHub's conditional requests:
// an ETag on every GET and a 304 Not Modified when If-None-Match names it.

/** GitHub's documented example bodies (@octokit/openapi components.examples), templates for the answers here. */
const examples = (
  createRequire(import.meta.url)('@octokit/openapi/generated/api.github.com.json') as {
    components: { examples: Record<string, { value: Record<string, unknown> }> };
  }
).components.examples;

export type PollingCall = { operationId: string; query: string };
type Polling = {
  notModified: number;
  calls: PollingCall[];
  /** Issues that are not pull requests, by `owner/repo#number` (the rest of the fake knows only pull requests). */
  issues: Map<string, { title: string; body: string; user: { login: string; id: number; type: string } }>;
};
type ListedComment = Record<string, unknown> & { repo: string; number: number; created_at: string; updated_at: string };
type RepoLike = { owner: string; name: string; id: number; installationId: number };
type PullLike = { number: number; repo: string; title: string; body: string; user: { login: string; id: number } };
type CheckRunLike = { repo: string; suiteId: number; headSha: string; conclusion: string; appSlug: string };
type Call = {
  operationId: string;
  params: Record<string, string>;
  query: URLSearchParams;
  repoKey: string | undefined;
  auth: { kind: 'installation'; installationId: number } | { kind: 'user' };
};
type State = {
  repos: readonly RepoLike[];
  comments: readonly ListedComment[];
  reviewComments: readonly ListedComment[];
  pulls: readonly PullLike[];
  checkRuns: readonly CheckRunLike[];
  htmlBase: string;
  polling: Polling;
  send: (status: number, body: unknown) => void;
};

/** A fresh record of the polling endpoints' use. */
export function pollingLog(): Polling {
  return { notModified: 0, calls: [], issues: new Map() };
}

/**
 * GitHub's ETag (a weak validator over the body) on a GET's 200, or a 304 with no body when the
 * request's If-None-Match names the same one. True when the answer was sent.
 */
export function conditional(req: IncomingMessage, res: ServerResponse, text: string, polling: Polling): boolean {
  const etag = `W/"${createHash('sha256').update(text).digest('hex').slice(0, 40)}"`;
  res.setHeader('etag', etag);
  if (req.headers['if-none-match'] !== etag) return false;
  polling.notModified += 1;
  res.statusCode = 304;
  res.removeHeader('content-type');
  res.end();
  return true;
}

/** GitHub's `since` (updated at or after), `sort=updated|created`, `direction`, and pages of `per_page`. */
function listComments(list: readonly ListedComment[], repoKey: string, query: URLSearchParams): ListedComment[] {
  const since = query.get('since');
  if (since !== null && Number.isNaN(Date.parse(since))) throw new Error(`since ${since} is not an ISO 8601 time`);
  const field = query.get('sort') === 'created' ? 'created_at' : 'updated_at';
  const order = query.get('direction') === 'desc' ? -1 : 1;
  const perPage = Math.min(Number(query.get('per_page') ?? 30), 100);
  const page = Number(query.get('page') ?? 1);
  return list
    .filter((c) => c.repo === repoKey && (since === null || Date.parse(c.updated_at) >= Date.parse(since)))
    .sort((a, b) => order * (Date.parse(a[field]) - Date.parse(b[field])))
    .slice((page - 1) * perPage, page * perPage);
}

/** Answers one of the polling endpoints the way GitHub does. */
export function answerPolling(call: Call, state: State) {
  const { operationId, params, query, repoKey } = call;
  state.polling.calls.push({ operationId, query: query.toString() });
  const strip = ({ repo: _r, number: _n, ...rest }: ListedComment) => rest;
  switch (operationId) {
    case 'apps/list-repos-accessible-to-installation': {
      if (call.auth.kind !== 'installation')
        return state.send(403, { message: 'Resource not accessible by integration' });
      const installationId = call.auth.installationId;
      const mine = state.repos.filter((r) => r.installationId === installationId);
      return state.send(200, {
        total_count: mine.length,
        repositories: mine.map((r) => ({
          id: r.id,
          node_id: `R_${r.id}`,
          name: r.name,
          full_name: `${r.owner}/${r.name}`,
          owner: { login: r.owner, id: 1, type: 'Organization' },
          private: true,
          html_url: `${state.htmlBase}/${r.owner}/${r.name}`,
        })),
      });
    }
    case 'issues/list-comments-for-repo':
      return state.send(200, listComments(state.comments, repoKey!, query).map(strip));
    case 'pulls/list-review-comments-for-repo':
      return state.send(
        200,
        listComments(state.reviewComments, repoKey!, query).map((c) => ({
          ...strip(c),
          pull_request_url: `${state.htmlBase}/api/v3/repos/${c.repo}/pulls/${c.number}`,
        })),
      );
    case 'issues/get':
      return answerIssue(repoKey!, Number(params.issue_number), state);
    case 'checks/list-suites-for-ref':
      return answerSuites(repoKey!, params.ref!, state);
    default:
      return state.send(501, { message: `the fake does not implement ${operationId}` });
  }
}

/** An issue, or a pull request's conversation as an issue (with `pull_request`); 404 for a number that is neither. */
function answerIssue(repoKey: string, number: number, state: State) {
  const pull = state.pulls.find((p) => p.repo === repoKey && p.number === number);
  const issue = state.polling.issues.get(`${repoKey}#${number}`);
  const base = `${state.htmlBase}/api/v3/repos/${repoKey}`;
  if (!pull && !issue)
    return state.send(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
  const shown = pull ?? issue!;
  return state.send(200, {
    ...structuredClone(examples.issue!.value),
    id: number + 70_000,
    node_id: `I_${number}`,
    url: `${base}/issues/${number}`,
    repository_url: base,
    html_url: `${state.htmlBase}/${repoKey}/${pull ? 'pull' : 'issues'}/${number}`,
    number,
    state: 'open',
    title: shown.title,
    body: shown.body,
    user: shown.user,
    labels: [],
    pull_request: pull
      ? {
          url: `${base}/pulls/${number}`,
          html_url: `${state.htmlBase}/${repoKey}/pull/${number}`,
          diff_url: null,
          patch_url: null,
        }
      : undefined,
  });
}

/** The check suites on a commit, from its check runs: completed, failing when any run failed. */
function answerSuites(repoKey: string, ref: string, state: State) {
  const runs = state.checkRuns.filter((c) => c.repo === repoKey && c.headSha === ref);
  const suiteIds = [...new Set(runs.map((c) => c.suiteId))];
  const suites = suiteIds.map((id) => {
    const mine = runs.filter((c) => c.suiteId === id);
    const failed = mine.find((c) => c.conclusion === 'failure' || c.conclusion === 'timed_out');
    const template = structuredClone(examples['check-suite']!.value);
    return {
      ...template,
      id,
      node_id: `CS_${id}`,
      head_sha: ref,
      status: 'completed',
      conclusion: failed ? failed.conclusion : 'success',
      url: `${state.htmlBase}/api/v3/repos/${repoKey}/check-suites/${id}`,
      check_runs_url: `${state.htmlBase}/api/v3/repos/${repoKey}/check-suites/${id}/check-runs`,
      pull_requests: [],
      app: { ...((template.app as Record<string, unknown>) ?? {}), slug: mine[0]!.appSlug },
      latest_check_runs_count: mine.length,
    };
  });
  return state.send(200, { total_count: suites.length, check_suites: suites });
}
