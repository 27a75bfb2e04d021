import { parseRepoName, parseRepoUrl, repoFullName, type RepoRef } from '../../src/core/repo-ref.ts';

/** A GitHub repository as `owner/repo`. */
export type RepoName = RepoRef;

const bare =
  /(?<=^|[\s(`'"])([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)\/([A-Za-z0-9._-]*[A-Za-z0-9_-])(?=$|[\s)`'",;:!?]|\.(?:\s|$))/g;

export const fullName = repoFullName;

/** A repository link people wrote: on the configured git host (GitHub Enterprise) or github.com, deeper links included. */
const parseLink = (text: string, gitUrl: string) =>
  parseRepoUrl(text, [gitUrl, 'https://github.com'], { trailingPath: true });

/**
 * The repositories a text names, first mention first: URLs on GitHub (or the configured host), and
 * bare `owner/repo` words only when they are among `known` (a bare word is too easily a path).
 */
export function findRepos(text: string, gitUrl: string, known: string[] = []): RepoName[] {
  const found = new Map<string, RepoName>();
  const add = (r: RepoName) => found.has(fullName(r).toLowerCase()) || found.set(fullName(r).toLowerCase(), r);
  for (const m of text.matchAll(/https?:\/\/[^\s<>()"'`]+/g)) {
    const repo = parseLink(m[0], gitUrl);
    if (repo) add(repo);
  }
  const knownSet = new Set(known.map((k) => k.toLowerCase()));
  for (const m of text.matchAll(bare)) {
    const r = { owner: m[1]!, repo: m[2]! };
    if (knownSet.has(fullName(r).toLowerCase())) add(r);
  }
  return [...found.values()];
}

/** A repository URL (or a link into one) as a repository. */
export function parseRepoLink(text: string, gitUrl: string): RepoName | undefined {
  return parseLink(text, gitUrl);
}

/** A LINEAR_TEAM_REPOS value (`owner/repo` or a URL) as a repository. */
export function parseRepoSetting(value: string, gitUrl: string): RepoName | undefined {
  return parseLink(value, gitUrl) ?? parseRepoName(value);
}
