import type { Actor } from '../../src/core/actor.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import type { RepoAccess, RepoAccessDecision, RepoAccessQuestion } from '../../src/core/repo-access.ts';
import { parseRepoUrl, repoFullName, sameRepo } from '../../src/core/repo-ref.ts';
import type { GitHubClient, PatchbayOctokit } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';
import { roleOn, type RepoRole } from './request-access.ts';

/** What GitHub says of one repository a session would touch, and of the requester there. */
export type RepoAccessFacts = {
  /** `owner/repo` of the repository asked for. */
  repo: string;
  /** The App installation covering it; undefined when the App is not installed on it. */
  installation: number | undefined;
  /** The repository the requester's own request was authorized for, and its installation. */
  home: { repo: string; installation: number | undefined };
  /** The requester as the thread names them. */
  who: string;
  /** Their GitHub login (a GitHub requester, or a person who connected their account); undefined: unknown. */
  login: string | undefined;
  /** Their permission on the repository, when their login is known. */
  role: RepoRole | undefined;
};

/**
 * The work follows the requester's own access, not the agent's choice. A repository the
 * App is not installed on is refused. A requester GitHub knows needs write access there, as for
 * their first request. One it does not know (a Slack or Linear person who connected no GitHub
 * account, the API) stays in the installation of the repository their request named: the
 * installation's repositories are all the agent can add.
 */
export function decideRepoAccess(facts: RepoAccessFacts): RepoAccessDecision {
  const { repo, installation, home, who, login, role } = facts;
  if (installation === undefined)
    return { allowed: false, reason: `the GitHub App is not installed on ${repo}, so I cannot work there` };
  if (login !== undefined) {
    if (role?.writes) return { allowed: true };
    return {
      allowed: false,
      reason: `${who} (@${login} on GitHub) has no write access to ${repo} (their permission there is ${role?.role ?? 'none'}), and I only work where the person who asked can write`,
    };
  }
  if (installation === home.installation) return { allowed: true };
  return {
    allowed: false,
    reason: `${repo} is outside the GitHub App installation of ${home.repo}, where ${who}'s request was made, and ${who} has no GitHub account connected for me to check their access to it (\`connect github\`)`,
  };
}

type AccessDeps = {
  client: Pick<GitHubClient, 'coveringInstallation' | 'forInstallation'>;
  store: Pick<GitHubStore, 'userToken'>;
  gitUrl: string;
};

/**
 * The GitHub App's answer to "may this requester have work done on this repository": asked by the
 * harness before a session's clone and before a sub-task is started (see decideRepoAccess).
 * Undefined for a repository on no GitHub host of this App, where none of its credentials go.
 */
export function createGitHubRepoAccess(deps: AccessDeps): RepoAccess {
  return { name: 'github', check: (question) => checkAccess(deps, question) };
}

async function checkAccess(deps: AccessDeps, question: RepoAccessQuestion): Promise<RepoAccessDecision | undefined> {
  const target = parseRepoUrl(question.repo, deps.gitUrl);
  if (!target) return undefined;
  const home = parseRepoUrl(question.home, deps.gitUrl);
  const installation = await deps.client.coveringInstallation(target);
  const octokit = installation === undefined ? undefined : await deps.client.forInstallation(installation);
  const login = await loginOf(deps.store, octokit, question.requester);
  const role = octokit && login !== undefined ? await roleOn(octokit, target, login) : undefined;
  // Only a requester GitHub does not know is held to the installation their request was made in.
  const homeInstallation =
    !home || login !== undefined || installation === undefined
      ? undefined
      : sameRepo(home, target)
        ? installation
        : await deps.client.coveringInstallation(home);
  return decideRepoAccess({
    repo: repoFullName(target),
    installation,
    home: { repo: home ? repoFullName(home) : question.home, installation: homeInstallation },
    who: question.requester.name,
    login,
    role,
  });
}

/**
 * The requester's GitHub login: their own (a GitHub requester), the account another service linked
 * (Linear's, by its id: a login can be renamed, an id cannot), or the account they connected here.
 */
async function loginOf(
  store: AccessDeps['store'],
  octokit: PatchbayOctokit | undefined,
  requester: Actor,
): Promise<string | undefined> {
  if (requester.githubLogin) return requester.githubLogin;
  if (requester.githubId && octokit) {
    const { data } = await octokit
      .request('GET /user/{account_id}', { account_id: Number(requester.githubId) })
      .catch((error: unknown) => {
        if ((error as { status?: unknown }).status !== 404) throw error;
        throw new PatchbayError('unauthorized', `the GitHub account linked to ${requester.name} no longer exists`);
      });
    return data.login;
  }
  return (await store.userToken(`${requester.source}:${requester.id}`))?.login;
}
