import type { RepoMention } from '../../src/core/repo-mentions.ts';

/** How a repository reads in a message: `owner/repo`, with its branch when one was named. */
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

/**
 * The task of a session started for every repository a request named (the choice's "All of them"):
 * it works in `pick` and is told the others, so the agent can decide to fan out with one sub-task
 * per repository (spawn_subtasks with each task's `repo`).
 */
export function allReposTask(
  text: string,
  candidates: RepoMention[],
  pick: RepoMention,
  urlFor: (owner: string, repo: string) => string,
): string {
  const others = candidates.filter((c) => c !== pick).map((c) => urlFor(c.owner, c.repo));
  return `${text}\n\nThis request is for all of these repositories: ${urlFor(pick.owner, pick.repo)} (this session's) and ${others.join(', ')}. Make the change in this session's repository here; for each of the others, use spawn_subtasks with that task's \`repo\` set to its URL, so each gets its own pull request.`;
}
