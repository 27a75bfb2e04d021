/**
 * A session family: a parent session and the sub-tasks it fanned out, each a child
 * session. Children on the parent's repository merge into its pull request; a child on another
 * repository opens its own, and every pull request of the family links the others.
 */

/** One session of a family, with the pull request it opened, if any. */
export type FamilyMember = { sessionId: string; repo: string; prUrl?: string | undefined };

/** Where publishers and repliers read a family from (the session store, wired by the composition root). */
export type SessionFamily = {
  /**
   * Every session of `sessionId`'s family, itself included, the parent first: for a parent its
   * children, for a child its parent and siblings. A session without a family is a family of one.
   */
  family(sessionId: string): Promise<FamilyMember[]>;
};

/** One pull request of a family, for a message that lists them. */
export type FamilyPull = { url: string; repo: string };

/**
 * The family's pull requests, one per URL, in family order. `self` is a session whose pull request
 * was opened just now (the family may not have it recorded yet): it takes that session's place.
 */
export function familyPulls(
  members: readonly FamilyMember[],
  self?: { sessionId: string; repo: string; url: string },
): FamilyPull[] {
  const pulls: FamilyPull[] = [];
  const seen = new Set<string>();
  const add = (url: string | undefined, repo: string) => {
    if (url === undefined || seen.has(url)) return;
    seen.add(url);
    pulls.push({ url, repo });
  };
  for (const member of members) add(member.sessionId === self?.sessionId ? self.url : member.prUrl, member.repo);
  if (self) add(self.url, self.repo);
  return pulls;
}

/**
 * "Opened 2 pull requests: <a> (repo a), <b> (repo b)", each link written by the surface's own
 * `link` (Slack's `<url|text>`, Markdown's `[text](url)`). Undefined for fewer than two: one pull
 * request is told the usual way. Pure.
 */
export function renderFamilyPulls(
  pulls: readonly FamilyPull[],
  link: (url: string, text: string) => string,
): string | undefined {
  if (pulls.length < 2) return undefined;
  const items = pulls.map((pull) => `${link(pull.url, pullLabel(pull.url))} (${repoLabel(pull.repo)})`);
  return `Opened ${pulls.length} pull requests: ${items.join(', ')}`;
}

/** `owner/repo#12` for a GitHub pull request URL, else the URL itself. */
export function pullLabel(url: string): string {
  const match = /^https?:\/\/[^/]+\/([^/]+)\/([^/]+)\/pull\/(\d+)\/?$/.exec(url);
  return match ? `${match[1]}/${match[2]}#${match[3]}` : url;
}

/** The repository as people name it: `owner/repo` of a URL, without `.git`. */
function repoLabel(repo: string): string {
  const match = /([^/:]+)\/([^/]+?)(?:\.git)?\/?$/.exec(repo.trim());
  return match ? `${match[1]}/${match[2]}` : repo;
}
