import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** GitHub's documented example bodies (@octokit/openapi components.examples), templates for the answers here. */
const examples = (
  createRequire(import.meta.url)('@octokit/openapi/generated/api.github.com.json') as {
    components: { examples: Record<string, { value: Record<string, unknown> }> };
  }
).components.examples;

/** One rule of a ruleset as GET /repos/{owner}/{repo}/rules/branches/{branch} lists it. */
export type BranchRule = {
  type: string;
  ruleset_source_type: 'Repository' | 'Organization';
  ruleset_source: string;
  ruleset_id: number;
  parameters?: Record<string, unknown>;
};

type StatusRecord = {
  repo: string;
  sha: string;
  state: string;
  context: string;
  target_url?: string;
  description?: string;
};
type CheckRunLike = { repo: string; headSha: string; name: string; conclusion: string; appSlug: string; id: number };
type Call = {
  operationId: string;
  params: Record<string, string>;
  query: URLSearchParams;
  repoKey: string;
  gitDir: string;
};
type State = {
  statuses: readonly StatusRecord[];
  checkRuns: readonly CheckRunLike[];
  branchRules: ReadonlyMap<string, BranchRule[]>;
  htmlBase: string;
  send: (status: number, body: unknown) => void;
};

/** GitHub's order for GET /repos/{owner}/{repo}/pulls: `sort` (created, updated) and `direction`. */
export function sortPulls<P extends { number: number; closedAt?: string }>(list: P[], query: URLSearchParams): P[] {
  const sort = query.get('sort') ?? 'created';
  const direction = query.get('direction') ?? (sort === 'created' ? 'desc' : 'asc');
  if (!query.has('sort') && !query.has('direction')) return list;
  const at = (p: P) => (sort === 'updated' && p.closedAt ? Date.parse(p.closedAt) : p.number);
  return [...list].sort((a, b) => (direction === 'desc' ? at(b) - at(a) : at(a) - at(b)));
}

/** One page of a list, as `per_page` (30 by default, 100 at most) and `page` ask. */
export function pageOf<T>(list: readonly T[], query: URLSearchParams): T[] {
  const perPage = Math.min(100, Number(query.get('per_page') ?? 30));
  const page = Number(query.get('page') ?? 1);
  return list.slice((page - 1) * perPage, page * perPage);
}

/** The scout's reads: a commit's combined status and check runs, a branch's rules, its classic protection. */
export async function answerHistory(call: Call, state: State): Promise<void> {
  const { params, repoKey, query } = call;
  const ref = params.ref ?? '';
  const api = `${state.htmlBase}/api/v3/repos/${repoKey}`;
  switch (call.operationId) {
    case 'repos/get-combined-status-for-ref': {
      const sha = await resolve(call.gitDir, ref);
      if (!sha) return state.send(422, { message: `No commit found for SHA: ${ref}`, status: '422' });
      // The latest status per context, newest first, as GitHub combines them.
      const latest = new Map<string, StatusRecord>();
      for (const s of state.statuses) if (s.repo === repoKey && s.sha === sha) latest.set(s.context, s);
      const list = [...latest.values()].reverse();
      const template = examples['combined-commit-status']!.value;
      const simple = (template.statuses as Record<string, unknown>[])[0]!;
      return state.send(200, {
        ...template,
        state: list.some((s) => s.state === 'failure' || s.state === 'error')
          ? 'failure'
          : list.every((s) => s.state === 'success')
            ? 'success'
            : 'pending',
        statuses: pageOf(list, query).map((s, i) => ({
          ...simple,
          id: i + 1,
          url: `${api}/statuses/${sha}`,
          state: s.state,
          context: s.context,
          description: s.description ?? null,
          target_url: s.target_url ?? null,
        })),
        sha,
        total_count: list.length,
        commit_url: `${api}/commits/${sha}`,
        url: `${api}/commits/${sha}/status`,
      });
    }
    case 'checks/list-for-ref': {
      const sha = await resolve(call.gitDir, ref);
      if (!sha) return state.send(422, { message: `No commit found for SHA: ${ref}`, status: '422' });
      const list = state.checkRuns.filter((c) => c.repo === repoKey && c.headSha === sha);
      const template = examples['check-run']!.value;
      return state.send(200, {
        total_count: list.length,
        check_runs: pageOf(list, query).map((c) => ({
          ...template,
          id: c.id,
          head_sha: sha,
          name: c.name,
          status: 'completed',
          conclusion: c.conclusion,
          details_url: `${state.htmlBase}/${repoKey}/runs/${c.id}`,
          html_url: `${state.htmlBase}/${repoKey}/runs/${c.id}`,
          app: { ...(template.app as Record<string, unknown>), slug: c.appSlug },
          pull_requests: [],
        })),
      });
    }
    case 'repos/get-branch-rules':
      return state.send(200, pageOf(state.branchRules.get(`${repoKey}:${params.branch}`) ?? [], query));
    case 'repos/get-branch-protection':
      // Patchbay's App has Administration: read only where a test grants it; then no branch here is protected.
      return state.send(404, {
        message: 'Branch not protected',
        documentation_url: 'https://docs.github.com/rest/branches/branch-protection#get-branch-protection',
        status: '404',
      });
    default:
      throw new Error(`answerHistory does not answer ${call.operationId}`);
  }
}

/** The commit a ref names (a SHA, a branch), or undefined when the repository has none. */
async function resolve(gitDir: string, ref: string): Promise<string | undefined> {
  try {
    const { stdout } = await run('git', ['--git-dir', gitDir, 'rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
    return stdout.trim();
  } catch {
    return undefined;
  }
}

/**
 * `count` commits on top of `base` in a bare repository, not on any branch: the head commits of
 * pull requests whose branches were deleted when they closed (kept under refs/history, as GitHub keeps them under refs/pull).
 */
export async function makeHeadCommits(gitDir: string, base: string, count: number): Promise<string[]> {
  const env = {
    PATH: '/usr/bin:/bin',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'contributor',
    GIT_AUTHOR_EMAIL: 'contributor@example.com',
    GIT_COMMITTER_NAME: 'contributor',
    GIT_COMMITTER_EMAIL: 'contributor@example.com',
  };
  const git = async (...args: string[]) => (await run('git', ['--git-dir', gitDir, ...args], { env })).stdout.trim();
  const tree = await git('rev-parse', `${base}^{tree}`);
  const parent = await git('rev-parse', base);
  const shas: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const sha = await git('commit-tree', tree, '-p', parent, '-m', `change ${i + 1}`);
    await git('update-ref', `refs/history/${i + 1}`, sha);
    shas.push(sha);
  }
  return shas;
}
