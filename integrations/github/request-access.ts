import type { WorkRequest } from './webhook-payloads.ts';
import type { PatchbayOctokit } from './github-client.ts';
import type { CommentPlace } from './github-comments.ts';

const writeRoles = new Set(['admin', 'maintain', 'write']);

/** Whether the person who asked has write access to the repository (only they may ask for work). */
export async function canWrite(octokit: PatchbayOctokit, request: WorkRequest): Promise<boolean> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
    owner: request.owner,
    repo: request.repo,
    username: request.sender.login,
  });
  return writeRoles.has(data.role_name) || writeRoles.has(data.permission);
}

/** Where a request's replies go: its conversation, or the review thread it was asked in. */
export function placeOf(request: WorkRequest): CommentPlace {
  const where = { owner: request.owner, repo: request.repo };
  return request.reply.in === 'review'
    ? { ...where, number: request.number, in: 'review', id: request.reply.id }
    : { ...where, number: request.number, in: 'issue' };
}
