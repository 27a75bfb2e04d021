import type { RepoRef } from '../../src/core/repo-ref.ts';
import type { WorkRequest } from './webhook-payloads.ts';
import type { PatchbayOctokit } from './github-client.ts';
import type { CommentPlace } from './github-comments.ts';

const writeRoles = new Set(['admin', 'maintain', 'write']);

/** A person's permission on a repository, as GitHub names it, and whether it lets them write. */
export type RepoRole = { role: string; writes: boolean };

/**
 * `login`'s permission on a repository, read with a client of the repository's own installation:
 * the one check of who may have work done there, for the first request and every repository after
 * it. GitHub answers 404 for a login it does not know, which has no permission at all.
 */
export async function roleOn(octokit: PatchbayOctokit, repo: RepoRef, login: string): Promise<RepoRole> {
  try {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
      owner: repo.owner,
      repo: repo.repo,
      username: login,
    });
    const role = data.role_name || data.permission;
    return { role, writes: writeRoles.has(data.role_name) || writeRoles.has(data.permission) };
  } catch (error) {
    if ((error as { status?: unknown }).status === 404) return { role: 'none', writes: false };
    throw error;
  }
}

/** Whether the person who asked has write access to the repository (only they may ask for work). */
export async function canWrite(octokit: PatchbayOctokit, request: WorkRequest): Promise<boolean> {
  return (await roleOn(octokit, request, request.sender.login)).writes;
}

/** Where a request's replies go: its conversation, or the review thread it was asked in. */
export function placeOf(request: WorkRequest): CommentPlace {
  const where = { owner: request.owner, repo: request.repo };
  return request.reply.in === 'review'
    ? { ...where, number: request.number, in: 'review', id: request.reply.id }
    : { ...where, number: request.number, in: 'issue' };
}
