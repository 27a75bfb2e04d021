import type { Logger } from 'pino';
import { parseRepoUrl } from '../../src/core/repo-ref.ts';
import {
  type FamilyMember,
  type FamilyPull,
  familyPulls,
  pullLabel,
  type SessionFamily,
} from '../../src/core/session-family.ts';
import type { GitHubClient } from './github-client.ts';
import { sessionMarker } from './render-pull-request.ts';

const sectionStart = '<!-- patchbay:family -->';
const sectionEnd = '<!-- /patchbay:family -->';
const sectionPattern = /<!-- patchbay:family -->[\s\S]*?<!-- \/patchbay:family -->\n*/;

/** The marked "Part of …" section linking the other pull requests of a family; undefined when there are none. */
export function familySection(others: readonly FamilyPull[]): string | undefined {
  if (others.length === 0) return undefined;
  const links = others.map((pull) => `[${pullLabel(pull.url)}](${pull.url})`).join(', ');
  return `${sectionStart}\n**Part of one change across repositories**, with ${links}.\n${sectionEnd}`;
}

/**
 * `body` with its family section replaced by `section` (or added at the top, or removed when
 * `section` is undefined). Everything else in the body stays as it is, so calling it again with
 * the same section changes nothing. Pure.
 */
export function withFamilySection(body: string, section: string | undefined): string {
  const replacement = section === undefined ? '' : `${section}\n\n`;
  if (sectionPattern.test(body)) return body.replace(sectionPattern, () => replacement);
  return section === undefined ? body : `${replacement}${body}`;
}

/** The family's other pull requests, as a session publishing its own sees them now. */
export async function otherFamilyPulls(family: SessionFamily | undefined, sessionId: string): Promise<FamilyPull[]> {
  if (!family) return [];
  return familyPulls((await family.family(sessionId)).filter((member) => member.sessionId !== sessionId));
}

type LinkDeps = { client: GitHubClient; family: SessionFamily; gitUrl: string; log: Logger };

/**
 * After a session opened or updated its pull request: every other pull request of its family that
 * Patchbay opened gets its family section rewritten to link all the others, this one included
 * (the children's open first, so the last one to open is what links them all). Bodies that already
 * say it are not touched. Best effort: a pull request that cannot be read or written is logged.
 */
export async function linkFamilyPulls(
  deps: LinkDeps,
  self: { sessionId: string; repo: string; url: string },
  signal: AbortSignal,
): Promise<void> {
  const members = await deps.family.family(self.sessionId);
  const all = familyPulls(members, self);
  for (const member of members) {
    if (member.sessionId === self.sessionId || !member.prUrl || member.prUrl === self.url) continue;
    const others = all.filter((pull) => pull.url !== member.prUrl);
    await relink(deps, member, others, signal).catch((error: unknown) =>
      deps.log.warn({ err: error, pr: member.prUrl }, 'could not link a pull request of the session family'),
    );
  }
}

async function relink(deps: LinkDeps, member: FamilyMember, others: FamilyPull[], signal: AbortSignal): Promise<void> {
  const where = pullOf(member.prUrl ?? '', deps.gitUrl);
  if (!where) return;
  const octokit = await deps.client.forRepo(where);
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
    owner: where.owner,
    repo: where.repo,
    pull_number: where.number,
    request: { signal },
  });
  const body = data.body ?? '';
  // Only a description Patchbay wrote for that session is Patchbay's to change.
  if (!body.includes(sessionMarker(member.sessionId))) return;
  const next = withFamilySection(body, familySection(others));
  if (next === body) return;
  await octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
    owner: where.owner,
    repo: where.repo,
    pull_number: where.number,
    body: next,
    request: { signal },
  });
  deps.log.info({ pr: member.prUrl }, 'pull request linked to its session family');
}

/** The repository and number of a pull request URL on this GitHub. */
function pullOf(url: string, gitUrl: string): { owner: string; repo: string; number: number } | undefined {
  const repo = parseRepoUrl(url, gitUrl, { trailingPath: true });
  const number = /\/pull\/(\d+)\/?$/.exec(url)?.[1];
  return repo && number ? { ...repo, number: Number(number) } : undefined;
}
