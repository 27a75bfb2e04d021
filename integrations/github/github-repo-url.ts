/** A repository on the configured GitHub host. */
export type GitHubRepo = { owner: string; repo: string };

const namePart = /^[A-Za-z0-9_.-]+$/;

/**
 * Reads `<gitUrl>/owner/repo` (with or without `.git` or a trailing slash) as a GitHub repository;
 * undefined for anything else (another host, a local path), which the GitHub hooks then leave alone.
 */
export function parseGitHubRepoUrl(gitUrl: string, repo: string): GitHubRepo | undefined {
  let base: URL;
  let url: URL;
  try {
    base = new URL(gitUrl);
    url = new URL(repo.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== base.protocol || url.host.toLowerCase() !== base.host.toLowerCase()) return undefined;
  const prefix = base.pathname.replace(/\/+$/, '');
  if (!url.pathname.startsWith(`${prefix}/`)) return undefined;
  const parts = url.pathname.slice(prefix.length + 1).replace(/\/+$/, '').replace(/\.git$/i, '').split('/');
  if (parts.length !== 2) return undefined;
  const [owner, name] = parts as [string, string];
  if (!namePart.test(owner) || !namePart.test(name) || name === '.' || name === '..') return undefined;
  return { owner, repo: name };
}

/** The session repo string for a GitHub repository: `<gitUrl>/owner/repo`. */
export function gitHubRepoUrl(gitUrl: string, repo: GitHubRepo): string {
  return `${gitUrl.replace(/\/+$/, '')}/${repo.owner}/${repo.repo}`;
}
