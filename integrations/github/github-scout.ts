import type { Logger } from 'pino';
import { parseRepoUrl } from '../../src/core/repo-ref.ts';
import type { RepositoryScout, ScoutReport } from '../../src/core/repository-scout.ts';
import type { GitHubClient, PatchbayOctokit } from './github-client.ts';
import { learnRules, type ScoutedPull } from './scout-rules.ts';

/**
 * How much one pass reads. Its cost is at most `1 + ceil(pulls / 100)` list calls, two ruleset
 * calls, `2 × checkSamples` status calls and `commentReads` comment calls: 33 REST calls with the
 * defaults, against the 5,000 an installation may make per hour.
 */
export type ScoutLimits = { pulls: number; checkSamples: number; commentReads: number };
export const defaultScoutLimits: ScoutLimits = { pulls: 50, checkSamples: 10, commentReads: 10 };

type PullJson = {
  number: number;
  html_url: string;
  title: string;
  merged_at: string | null;
  head: { ref: string; sha: string };
  base: { ref: string };
};
type CommentJson = {
  body?: string;
  html_url: string;
  user: { login: string; type?: string } | null;
  author_association?: string;
};

/** People whose word on a pull request is the repository's: its owners, members and collaborators. */
const maintainers = new Set(['OWNER', 'MEMBER', 'COLLABORATOR']);

/**
 * The scout for GitHub repositories: through the App, the last closed pull requests (branch names,
 * titles, the statuses and check runs on a sample of their heads, what bots and maintainers said on
 * the closed-unmerged ones) and the default branch's rules where the App may read them, made into
 * sourced rules. A repository the App does not reach gets no report.
 */
export function createRepositoryScout(deps: {
  client: GitHubClient;
  gitUrl: string;
  log: Logger;
  limits?: Partial<ScoutLimits>;
}): RepositoryScout {
  const limits = { ...defaultScoutLimits, ...deps.limits };
  return {
    name: 'github',
    async scout(repoUrl, signal) {
      const repo = parseRepoUrl(repoUrl, deps.gitUrl);
      if (!repo) return undefined;
      let octokit: PatchbayOctokit;
      try {
        octokit = await deps.client.forRepo(repo);
      } catch (error) {
        deps.log.info({ err: error, repo: repoUrl }, 'the App cannot read this repository; no scout pass');
        return undefined;
      }
      return scoutRepository(octokit, { owner: repo.owner, repo: repo.repo }, limits, signal);
    },
  };
}

/** One pass over a repository the App reaches, counting its REST calls. */
export async function scoutRepository(
  octokit: PatchbayOctokit,
  where: { owner: string; repo: string },
  limits: ScoutLimits,
  signal: AbortSignal,
): Promise<ScoutReport> {
  let calls = 0;
  const request = { signal };
  const get = async <T>(route: string, params: Record<string, unknown>): Promise<T> => {
    calls += 1;
    return (await octokit.request(route, { ...where, ...params, request })).data as T;
  };
  const listed: PullJson[] = [];
  for (let page = 1; listed.length < limits.pulls; page += 1) {
    const perPage = Math.min(100, limits.pulls);
    const batch = await get<PullJson[]>('GET /repos/{owner}/{repo}/pulls', {
      state: 'closed',
      sort: 'updated',
      direction: 'desc',
      per_page: perPage,
      page,
    });
    listed.push(...batch.slice(0, limits.pulls - listed.length));
    if (batch.length < perPage) break;
  }
  const pulls: ScoutedPull[] = listed.map((p) => ({
    number: p.number,
    url: p.html_url,
    title: p.title,
    head: p.head.ref,
    merged: p.merged_at !== null,
  }));
  for (const [i, p] of listed.slice(0, limits.checkSamples).entries())
    pulls[i]!.checks = await checksOn(get, p.head.sha);
  const closedUnmerged = pulls.filter((p) => !p.merged).slice(0, limits.commentReads);
  for (const p of closedUnmerged) {
    const comments = await get<CommentJson[]>('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      issue_number: p.number,
      per_page: 100,
    });
    p.comments = comments
      .filter((c) => c.user && (c.user.type === 'Bot' || maintainers.has(c.author_association ?? '')))
      .map((c) => ({ login: c.user!.login, body: c.body ?? '', url: c.html_url }));
  }
  const base = commonest(listed.map((p) => p.base.ref));
  const requiredChecks = base ? await requiredOn(get, base, signal) : [];
  const seen = new Date().toISOString();
  return { at: seen, pullsRead: pulls.length, calls, rules: learnRules({ pulls, requiredChecks, seen }) };
}

type Get = <T>(route: string, params: Record<string, unknown>) => Promise<T>;

/** The commit statuses and check runs on one head commit (a status's details link kept: a CLA's sign page). */
async function checksOn(get: Get, sha: string): Promise<{ name: string; url?: string }[]> {
  const combined = await get<{ statuses: { context: string; target_url: string | null }[] }>(
    'GET /repos/{owner}/{repo}/commits/{ref}/status',
    { ref: sha, per_page: 100 },
  );
  const runs = await get<{ check_runs: { name: string; details_url?: string | null }[] }>(
    'GET /repos/{owner}/{repo}/commits/{ref}/check-runs',
    { ref: sha, per_page: 100 },
  );
  return [
    ...combined.statuses.map((s) => ({ name: s.context, ...(s.target_url && { url: s.target_url }) })),
    ...runs.check_runs.map((c) => ({ name: c.name, ...(c.details_url && { url: c.details_url }) })),
  ];
}

/**
 * The status checks the default branch's rulesets and classic protection require, where the App may
 * read them (protection needs Administration: read, which Patchbay does not ask for: a refusal is
 * the usual answer and only means "not readable").
 */
async function requiredOn(get: Get, branch: string, signal: AbortSignal): Promise<string[]> {
  const required = new Set<string>();
  const unreadable =
    <T>(value: T) =>
    (error: unknown) => {
      if (signal.aborted) throw error;
      return value;
    };
  const rules = await get<{ type: string; parameters?: { required_status_checks?: { context: string }[] } }[]>(
    'GET /repos/{owner}/{repo}/rules/branches/{branch}',
    { branch, per_page: 100 },
  ).catch(unreadable([]));
  for (const rule of rules)
    if (rule.type === 'required_status_checks')
      for (const check of rule.parameters?.required_status_checks ?? []) required.add(check.context);
  const protection = await get<{ required_status_checks?: { contexts?: string[] } }>(
    'GET /repos/{owner}/{repo}/branches/{branch}/protection',
    { branch },
  ).catch(unreadable(undefined));
  for (const context of protection?.required_status_checks?.contexts ?? []) required.add(context);
  return [...required];
}

function commonest(values: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
}
