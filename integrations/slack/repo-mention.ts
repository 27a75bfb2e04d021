import type { RepoRef } from '../../src/core/repo-ref.ts';

/** A GitHub repository named in a message, with the branch its link named. */
export type RepoMention = RepoRef & { baseBranch?: string };

const END = String.raw`(?=$|[\s<>|?#,;)]|\.(?:\s|$))`;
/** A link to `owner/repo` (optionally `/tree/branch`) on one of `hosts`. */
function urlPattern(hosts: readonly string[]): RegExp {
  const host = hosts
    .map((h) => (h === 'github.com' ? String.raw`(?:www\.)?github\.com` : h.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('|');
  return new RegExp(
    String.raw`(?:https?:\/\/)?(?:${host})\/([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)\/([A-Za-z0-9._-]+?)(?:\.git)?` +
      String.raw`(?:\/tree\/([^\s<>|]+?)\/?${END}|\/?${END}|(?=\/))`,
    'gi',
  );
}
const BARE_RE =
  /(?<=^|[\s(`'"])([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)\/([A-Za-z0-9._-]*[A-Za-z0-9_-])(?=$|[\s)`'",;:!?]|\.(?:\s|$))/g;
// A bare `owner/repo` is ambiguous with a file path; these endings mean a path.
const FILE_ENDING =
  /\.(?:ts|tsx|js|jsx|mjs|cjs|md|json|py|go|rs|rb|java|kt|c|h|cc|cpp|cs|php|yml|yaml|toml|txt|css|scss|html|sh|lock|sql|xml|env)$/i;
const NOT_REPOS = new Set([
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

/**
 * Finds the GitHub repositories a message names, in order of first mention, without repeats:
 * `https://github.com/owner/repo` (Slack wraps links as `<url|label>`), `github.com/owner/repo/tree/branch`,
 * and, only when the message has no such link, a bare `owner/repo`. `hosts` are the git hosts whose
 * links count (GitHub Enterprise: the host of GITHUB_GIT_URL).
 */
export function findRepoMentions(text: string, hosts: readonly string[] = ['github.com']): RepoMention[] {
  const found = new Map<string, RepoMention>();
  const add = (owner: string, repo: string, branch?: string) => {
    const key = `${owner}/${repo}`.toLowerCase() + (branch ? `#${branch}` : '');
    if (!found.has(key)) found.set(key, { owner, repo, ...(branch && { baseBranch: decodeURIComponent(branch) }) });
  };
  for (const m of text.matchAll(urlPattern(hosts))) add(m[1]!, m[2]!, m[3]);
  if (found.size === 0) {
    const plain = text.replace(/<[^>]*>/g, ' ');
    for (const m of plain.matchAll(BARE_RE)) {
      const [whole, owner, repo] = m as unknown as [string, string, string];
      if (NOT_REPOS.has(whole.toLowerCase()) || FILE_ENDING.test(repo) || /^\d+$/.test(owner)) continue;
      add(owner, repo);
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

export function repoLabel(mention: RepoMention): string {
  return `${mention.owner}/${mention.repo}${mention.baseBranch ? ` (branch ${mention.baseBranch})` : ''}`;
}

/**
 * Picks one of several candidates to recommend, with the reason in words: the one named most
 * often, else the one with an explicit branch, else the first named.
 */
export function recommendRepo(text: string, candidates: RepoMention[]): { pick: RepoMention; why: string } {
  const counts = candidates.map((c) => countMentions(text, c));
  const most = Math.max(...counts);
  const index = counts.indexOf(most);
  if (most > 1 && counts.filter((n) => n === most).length === 1) {
    return { pick: candidates[index]!, why: `it is the one your message names most often (${most} times)` };
  }
  const withBranch = candidates.filter((c) => c.baseBranch);
  if (withBranch.length === 1) return { pick: withBranch[0]!, why: 'it is the only one with a branch given' };
  return { pick: candidates[0]!, why: 'it is the first one your message names' };
}

function countMentions(text: string, c: RepoMention): number {
  const needle = `${c.owner}/${c.repo}`.toLowerCase();
  return text.toLowerCase().split(needle).length - 1;
}

/**
 * Which candidate a reply chooses: by number ("2"), by `owner/repo`, or by the repo name alone
 * when that is unambiguous. Undefined when the reply names none or several.
 */
export function chooseCandidate(reply: string, candidates: RepoMention[]): RepoMention | undefined {
  const text = reply
    .replace(/<[^>|]*\|([^>]*)>/g, '$1')
    .replace(/<([^>]*)>/g, '$1')
    .trim()
    .toLowerCase();
  const number = /^#?(\d+)\.?$/.exec(text);
  if (number) return candidates[Number(number[1]) - 1];
  const full = candidates.filter((c) => text.includes(`${c.owner}/${c.repo}`.toLowerCase()));
  if (full.length === 1) return full[0];
  if (full.length > 1) return undefined;
  const byName = candidates.filter((c) =>
    new RegExp(`(^|[^\\w.-])${escapeRe(c.repo.toLowerCase())}($|[^\\w.-])`).test(text),
  );
  return byName.length === 1 ? byName[0] : undefined;
}

function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
