import { parseRepoUrl, repoFullName, type RepoRef } from './repo-ref.ts';

/**
 * Finding the repositories people name in what they write (a Slack message, a Linear issue or
 * comment): links on a git host, and bare `owner/repo` words. Every surface reads prose through
 * here; a URL that must name a repository exactly goes to `parseRepoUrl` instead.
 */

/** A repository named in a message, with the branch its link named. */
export type RepoMention = RepoRef & { baseBranch?: string };

/** A bare `owner/repo` word, as people type it in prose (a trailing full stop ends it). */
const bareRepoName =
  /(?<=^|[\s(`'"])([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)\/([A-Za-z0-9._-]*[A-Za-z0-9_-])(?=$|[\s)`'",;:!?]|\.(?:\s|$))/g;

const linkEnd = String.raw`(?=$|[\s<>|?#,;)]|\.(?:\s|$))`;

/** A link to `owner/repo` (optionally `/tree/branch`) on one of `hosts`, with or without its scheme. */
function hostLinkPattern(hosts: readonly string[]): RegExp {
  const host = hosts
    .map((h) => (h === 'github.com' ? String.raw`(?:www\.)?github\.com` : h.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('|');
  return new RegExp(
    String.raw`(?:https?:\/\/)?(?:${host})\/([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)\/([A-Za-z0-9._-]+?)(?:\.git)?` +
      String.raw`(?:\/tree\/([^\s<>|]+?)\/?${linkEnd}|\/?${linkEnd}|(?=\/))`,
    'gi',
  );
}

// A bare `owner/repo` is ambiguous with a file path; these endings mean a path.
const fileEnding =
  /\.(?:ts|tsx|js|jsx|mjs|cjs|md|json|py|go|rs|rb|java|kt|c|h|cc|cpp|cs|php|yml|yaml|toml|txt|css|scss|html|sh|lock|sql|xml|env)$/i;
const notRepos = new Set([
  'and/or',
  'either/or',
  'n/a',
  'i/o',
  'yes/no',
  'on/off',
  'w/o',
  'read/write',
  'client/server',
]);

/** The bare `owner/repo` words of a text, in order (repeats included). */
function* bareRepoNames(text: string): Iterable<{ whole: string; ref: RepoRef }> {
  for (const m of text.matchAll(bareRepoName)) yield { whole: m[0], ref: { owner: m[1]!, repo: m[2]! } };
}

/**
 * Finds the GitHub repositories a chat message names, in order of first mention, without repeats:
 * `https://github.com/owner/repo` (Slack wraps links as `<url|label>`), `github.com/owner/repo/tree/branch`,
 * and, only when the message has no such link, a bare `owner/repo` that does not read as a file path.
 * `hosts` are the git hosts whose links count (GitHub Enterprise: the host of GITHUB_GIT_URL).
 */
export function findRepoMentions(text: string, hosts: readonly string[] = ['github.com']): RepoMention[] {
  const found = new Map<string, RepoMention>();
  const add = (owner: string, repo: string, branch?: string) => {
    const key = `${owner}/${repo}`.toLowerCase() + (branch ? `#${branch}` : '');
    if (!found.has(key)) found.set(key, { owner, repo, ...(branch && { baseBranch: decodeURIComponent(branch) }) });
  };
  for (const m of text.matchAll(hostLinkPattern(hosts))) add(m[1]!, m[2]!, m[3]);
  if (found.size === 0) {
    for (const { whole, ref } of bareRepoNames(text.replace(/<[^>]*>/g, ' '))) {
      if (notRepos.has(whole.toLowerCase()) || fileEnding.test(ref.repo) || /^\d+$/.test(ref.owner)) continue;
      add(ref.owner, ref.repo);
    }
  }
  return [...dedupeBranchless(found.values())];
}

/** `owner/repo` and `owner/repo/tree/x` in one message are the same repository: keep the one with the branch. */
function* dedupeBranchless(mentions: Iterable<RepoMention>): Iterable<RepoMention> {
  const list = [...mentions];
  for (const m of list) {
    const same = (o: RepoMention) => `${o.owner}/${o.repo}`.toLowerCase() === `${m.owner}/${m.repo}`.toLowerCase();
    if (!m.baseBranch && list.some((o) => o !== m && o.baseBranch && same(o))) continue;
    yield m;
  }
}

/**
 * The repositories a text names, first mention first, without repeats: URLs on one of `bases`
 * (git host URLs, GitHub Enterprise with its path prefix; links deeper into a repository count),
 * and bare `owner/repo` words only when they are among `known` (a bare word is too easily a path).
 */
export function findKnownRepos(text: string, bases: readonly string[], known: readonly string[] = []): RepoRef[] {
  const found = new Map<string, RepoRef>();
  const add = (r: RepoRef) => found.has(repoFullName(r).toLowerCase()) || found.set(repoFullName(r).toLowerCase(), r);
  for (const m of text.matchAll(/https?:\/\/[^\s<>()"'`]+/g)) {
    const repo = parseRepoUrl(m[0], bases, { trailingPath: true });
    if (repo) add(repo);
  }
  const knownNames = new Set(known.map((k) => k.toLowerCase()));
  for (const { ref } of bareRepoNames(text)) if (knownNames.has(repoFullName(ref).toLowerCase())) add(ref);
  return [...found.values()];
}
