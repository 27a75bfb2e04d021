/**
 * A repository on a GitHub host (github.com or GitHub Enterprise): the one shape every surface,
 * publisher and link uses, and the one parser for repository URLs.
 */
export type RepoRef = { owner: string; repo: string };

const namePart = /^[A-Za-z0-9_.-]+$/;
const validName = (owner: string, repo: string) =>
  namePart.test(owner) && namePart.test(repo) && repo !== '.' && repo !== '..' && owner !== '.' && owner !== '..';

export const repoFullName = (ref: RepoRef): string => `${ref.owner}/${ref.repo}`;

/** Whether two refs name the same repository (GitHub names are case-insensitive). */
export const sameRepo = (a: RepoRef, b: RepoRef): boolean =>
  repoFullName(a).toLowerCase() === repoFullName(b).toLowerCase();

/**
 * Reads `<base>/owner/repo` as a repository, for any of `bases` (git host URLs such as
 * `https://github.com` or `https://ghe.example.com/prefix`): same scheme and host, the base's path
 * as prefix, `.git` and trailing slashes dropped. With `trailingPath`, a link deeper into the
 * repository (`/tree/main`, `/pull/1`) and a trailing punctuation mark also count, as in text
 * people write; without, the URL must name the repository exactly. `www.github.com` is github.com.
 * Undefined for anything else (another host, a local path, not a URL).
 */
export function parseRepoUrl(
  text: string,
  bases: string | readonly string[],
  options: { trailingPath?: boolean } = {},
): RepoRef | undefined {
  const trimmed = options.trailingPath ? text.trim().replace(/[.,;:)>\]]+$/, '') : text.trim();
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return undefined;
  }
  for (const base of typeof bases === 'string' ? [bases] : bases) {
    let b: URL;
    try {
      b = new URL(base);
    } catch {
      continue;
    }
    if (!sameHost(url, b)) continue;
    const prefix = b.pathname.replace(/\/+$/, '');
    if (!url.pathname.startsWith(`${prefix}/`)) continue;
    const parts = url.pathname
      .slice(prefix.length + 1)
      .replace(/\/+$/, '')
      .split('/');
    if (parts.length < 2 || (!options.trailingPath && parts.length !== 2)) continue;
    const owner = parts[0]!;
    const repo = parts[1]!.replace(/\.git$/i, '');
    if (validName(owner, repo)) return { owner, repo };
  }
  return undefined;
}

function sameHost(url: URL, base: URL): boolean {
  const host = url.host.toLowerCase();
  const baseHost = base.host.toLowerCase();
  if (baseHost === 'github.com') return host === 'github.com' || host === 'www.github.com';
  return url.protocol === base.protocol && host === baseHost;
}

/** `owner/repo` (nothing more) as a repository. */
export function parseRepoName(text: string): RepoRef | undefined {
  const parts = text.trim().split('/');
  if (parts.length !== 2) return undefined;
  const [owner, repo] = parts as [string, string];
  return validName(owner, repo) ? { owner, repo } : undefined;
}

/** The session's repo string for a repository: `<base>/owner/repo`. */
export function repoUrl(base: string, ref: RepoRef): string {
  return `${base.replace(/\/+$/, '')}/${ref.owner}/${ref.repo}`;
}

/** `owner/repo` of a session's repo string (a URL or a path), for a line that names the repository; the string itself when it has no such tail. */
export function repoShortName(repo: string): string {
  return /([^/:]+\/[^/]+?)(?:\.git)?\/?$/.exec(repo)?.[1] ?? repo;
}
