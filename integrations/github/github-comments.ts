import type { PatchbayOctokit } from './github-client.ts';

export type CommentPlace =
  | { owner: string; repo: string; number: number; in: 'issue' }
  | { owner: string; repo: string; number: number; in: 'review'; id: number };
export type CommentRef = { kind: 'issue' | 'review'; id: number };

/**
 * Posts a comment in the conversation, or a reply in the review thread of a review comment.
 * `options.retries: 0` turns Octokit's retries off (a post that must not be repeated blindly).
 */
export async function postComment(
  octokit: PatchbayOctokit,
  place: CommentPlace,
  body: string,
  signal?: AbortSignal,
  options: { retries?: number } = {},
): Promise<CommentRef> {
  const request = { ...(signal && { signal }), ...options };
  if (place.in === 'review') {
    const { data } = await octokit.request(
      'POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies',
      {
        owner: place.owner,
        repo: place.repo,
        pull_number: place.number,
        comment_id: place.id,
        body,
        request,
      },
    );
    return { kind: 'review', id: Number(data.id) };
  }
  const { data } = await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
    owner: place.owner,
    repo: place.repo,
    issue_number: place.number,
    body,
    request,
  });
  return { kind: 'issue', id: Number(data.id) };
}

export async function editComment(
  octokit: PatchbayOctokit,
  where: { owner: string; repo: string },
  comment: CommentRef,
  body: string,
  signal?: AbortSignal,
): Promise<void> {
  const request = signal ? { signal } : {};
  if (comment.kind === 'review') {
    await octokit.request('PATCH /repos/{owner}/{repo}/pulls/comments/{comment_id}', {
      ...where,
      comment_id: comment.id,
      body,
      request,
    });
  } else {
    await octokit.request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
      ...where,
      comment_id: comment.id,
      body,
      request,
    });
  }
}

/** The 👀 acknowledgement. */
export async function addEyes(
  octokit: PatchbayOctokit,
  where: { owner: string; repo: string },
  on: { on: 'issue-comment' | 'review-comment' | 'issue'; id: number },
): Promise<void> {
  switch (on.on) {
    case 'issue-comment':
      await octokit.request('POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions', {
        ...where,
        comment_id: on.id,
        content: 'eyes',
      });
      return;
    case 'review-comment':
      await octokit.request('POST /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions', {
        ...where,
        comment_id: on.id,
        content: 'eyes',
      });
      return;
    case 'issue':
      await octokit.request('POST /repos/{owner}/{repo}/issues/{issue_number}/reactions', {
        ...where,
        issue_number: on.id,
        content: 'eyes',
      });
      return;
    default: {
      const _never: never = on.on;
      return _never;
    }
  }
}
