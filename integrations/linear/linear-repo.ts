/** A GitHub repository as `owner/repo`. */
export type RepoName = { owner: string; repo: string };

const namePart = /^[A-Za-z0-9_.-]+$/;
const bare = /(?<=^|[\s(`'"])([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)\/([A-Za-z0-9._-]*[A-Za-z0-9_-])(?=$|[\s)`'",;:!?]|\.(?:\s|$))/g;

export const fullName = (r: RepoName) => `${r.owner}/${r.repo}`;

/**
 * Reads a repository URL on github.com or on the configured git host (`gitUrl`, for GitHub
 * Enterprise), with or without `.git`, trailing path (`/tree/x`, `/pull/1`) or slash.
 */
export function parseRepoUrl(text: string, gitUrl: string): RepoName | undefined {
  let url: URL;
  try {
    url = new URL(text.trim().replace(/[.,;:)>\]]+$/, ''));
  } catch {
    return undefined;
  }
  for (const base of [gitUrl, 'https://github.com']) {
    const b = new URL(base);
    if (url.host.toLowerCase() !== b.host.toLowerCase() && !(b.host === 'github.com' && url.host.toLowerCase() === 'www.github.com')) continue;
    const prefix = b.pathname.replace(/\/+$/, '');
    if (!url.pathname.startsWith(`${prefix}/`)) continue;
    const [owner, name] = url.pathname.slice(prefix.length + 1).split('/') as [string?, string?];
    const repo = name?.replace(/\.git$/i, '');
    if (owner && repo && namePart.test(owner) && namePart.test(repo) && repo !== '.' && repo !== '..') return { owner, repo };
  }
  return undefined;
}

/**
 * The repositories a text names, first mention first: URLs on GitHub (or the configured host), and
 * bare `owner/repo` words only when they are among `known` (a bare word is too easily a path).
 */
export function findRepos(text: string, gitUrl: string, known: string[] = []): RepoName[] {
  const found = new Map<string, RepoName>();
  const add = (r: RepoName) => found.has(fullName(r).toLowerCase()) || found.set(fullName(r).toLowerCase(), r);
  for (const m of text.matchAll(/https?:\/\/[^\s<>()"'`]+/g)) {
    const repo = parseRepoUrl(m[0], gitUrl);
    if (repo) add(repo);
  }
  const knownSet = new Set(known.map((k) => k.toLowerCase()));
  for (const m of text.matchAll(bare)) {
    const r = { owner: m[1]!, repo: m[2]! };
    if (knownSet.has(fullName(r).toLowerCase())) add(r);
  }
  return [...found.values()];
}

/** A LINEAR_TEAM_REPOS value (`owner/repo` or a URL) as a repository. */
export function parseRepoSetting(value: string, gitUrl: string): RepoName | undefined {
  const url = parseRepoUrl(value, gitUrl);
  if (url) return url;
  const [owner, repo, ...rest] = value.trim().split('/');
  return owner && repo && rest.length === 0 && namePart.test(owner) && namePart.test(repo) ? { owner, repo } : undefined;
}
