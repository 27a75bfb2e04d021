import type { Logger } from 'pino';
import { findKnownRepos } from '../../src/core/repo-mentions.ts';
import { parseRepoName, parseRepoUrl, repoFullName, type RepoRef } from '../../src/core/repo-ref.ts';
import type { LinearApi } from './linear-api.ts';
import { mentionOf, threadContextOf } from './linear-task.ts';
import type { AgentSessionEvent } from './linear-webhook.ts';

/** What the Linear integration knows of repositories: the git host and the GitHub App's installed repos. */
export type RepoCatalog = {
  gitUrl: string;
  /** The session's repo string for a repository (`<gitUrl>/owner/repo`). */
  repoUrl(repo: RepoRef): string;
  /** `owner/repo` of every repository the GitHub App is installed on (candidates to offer). */
  installed(): Promise<string[]>;
};

/** A repository chosen for a Linear agent session, and why, in words for the activity. */
export type RepoChoice = { repo: RepoRef; why: string };

const suggestionThreshold = 0.7;

/** Links people wrote count on the configured git host (GitHub Enterprise) and on github.com. */
const linkBases = (gitUrl: string) => [gitUrl, 'https://github.com'];

/** A repository URL (or a link into one, such as a pull request) as a repository. */
export function parseRepoLink(text: string, gitUrl: string): RepoRef | undefined {
  return parseRepoUrl(text, linkBases(gitUrl), { trailingPath: true });
}

/** `owner/repo` as a repository; an empty one for anything else (installed names are well formed). */
export function splitName(name: string): RepoRef {
  return parseRepoName(name) ?? { owner: '', repo: '' };
}

/**
 * Which repository a new agent session works in: the one named in the mention (the requester's
 * own words), in the rest of its comment thread, in the issue, the team's LINEAR_TEAM_REPOS
 * entry, or Linear's suggestion when it is confident. Undefined: ask the person.
 */
export async function resolveRepo(input: {
  event: AgentSessionEvent;
  api: LinearApi;
  repos: RepoCatalog;
  teamRepos: Record<string, string>;
  installed: string[];
  teamKey: string | undefined;
  log: Logger;
}): Promise<RepoChoice | undefined> {
  const { event, repos, installed, teamKey } = input;
  const session = event.agentSession;
  const named = (text: string) => findKnownRepos(text, linkBases(repos.gitUrl), installed)[0];
  const mention = mentionOf(event);
  const fromMention = mention && named(mention.body);
  if (fromMention) return { repo: fromMention, why: 'named in the comment' };
  const fromThread = named(
    threadContextOf(event, mention)
      .map((c) => c.body)
      .join('\n'),
  );
  if (fromThread) return { repo: fromThread, why: 'named in the comment thread' };
  const fromIssue = named(`${session.issue?.title ?? ''}\n${session.issue?.description ?? ''}`);
  if (fromIssue) return { repo: fromIssue, why: 'named in the issue' };
  const setting = teamKey ? input.teamRepos[teamKey.toUpperCase()] : undefined;
  const fromTeam = setting ? (parseRepoLink(setting, repos.gitUrl) ?? parseRepoName(setting)) : undefined;
  if (fromTeam) return { repo: fromTeam, why: `the ${teamKey} team's repository in LINEAR_TEAM_REPOS` };
  return suggestedRepo(input);
}

/** Linear's own suggestion among the installed repositories, when it is confident enough. */
async function suggestedRepo(input: {
  event: AgentSessionEvent;
  api: LinearApi;
  repos: RepoCatalog;
  installed: string[];
  log: Logger;
}): Promise<RepoChoice | undefined> {
  const { event, installed } = input;
  const session = event.agentSession;
  const issueId = session.issue?.id ?? session.issueId;
  if (!issueId || installed.length === 0) return undefined;
  const hostname = new URL(input.repos.gitUrl).host;
  const suggestions = await input.api
    .suggestRepositories(
      issueId,
      session.id,
      installed.map((repositoryFullName) => ({ hostname, repositoryFullName })),
    )
    .catch((error: unknown) => {
      input.log.warn({ err: error }, 'Linear repository suggestions failed; asking instead');
      return [];
    });
  const best = suggestions
    .filter((s) => s.confidence >= suggestionThreshold)
    .sort((a, b) => b.confidence - a.confidence)[0];
  if (best && installed.some((r) => r.toLowerCase() === best.repositoryFullName.toLowerCase())) {
    return {
      repo: splitName(best.repositoryFullName),
      why: `Linear suggested it with confidence ${best.confidence.toFixed(2)}`,
    };
  }
  return undefined;
}

/** Which of the offered repositories (URLs or `owner/repo`) a person's answer names, if any. */
export function offeredRepoNamed(answer: string, offered: string[], gitUrl: string): RepoRef | undefined {
  const names = offered.map((c) => repoFullName(parseRepoLink(c, gitUrl) ?? splitName(c)));
  return findKnownRepos(answer, linkBases(gitUrl), names)[0];
}
