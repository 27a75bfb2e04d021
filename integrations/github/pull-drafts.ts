import type { Logger } from 'pino';
import type { RepoRef } from '../../src/core/repo-ref.ts';
import type { PatchbayOctokit } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';

/**
 * Draft pull requests where the plan allows them. GitHub refuses drafts in private
 * repositories on the Free and Pro plans; there a PR opens ready, its title carries
 * `notVerifiedMark` while its head is not verified, and the `patchbay/verify` status says the rest
 * (ready means that status is success on the head). What GitHub refused is remembered per repository.
 */

export const notVerifiedMark = '[not verified]';

const draftRefusal = /draft pull requests are not supported/i;

/** GitHub's 422 "Draft pull requests are not supported in this repository." (REST), or its GraphQL error. */
export function draftsRefused(error: unknown): boolean {
  const { status, response, errors } = error as {
    status?: number;
    response?: { data?: { message?: string } };
    errors?: Array<{ message?: string }>;
  };
  if (status === 422 && draftRefusal.test(response?.data?.message ?? '')) return true;
  return (errors ?? []).some((e) => draftRefusal.test(e.message ?? ''));
}

/** The title with the mark in front, once. */
export function markedTitle(title: string): string {
  return title.startsWith(notVerifiedMark) ? title : `${notVerifiedMark} ${title}`;
}

/** The title without the mark. */
export function unmarkedTitle(title: string): string {
  return title.startsWith(notVerifiedMark) ? title.slice(notVerifiedMark.length).trimStart() : title;
}

/** A pull request whose "not verified" state is shown by draft state or, without drafts, its title. */
export type ShownPull = RepoRef & { number: number; nodeId: string; draft: boolean; title: string };

export type DraftDeps = { octokit: PatchbayOctokit; store: GitHubStore; signal: AbortSignal; log: Logger };

export const convertToDraftMutation = `mutation($id: ID!) {
  convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { id isDraft } }
}`;
const markReadyMutation = `mutation($id: ID!) {
  markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { id isDraft } }
}`;

/**
 * Shows the pull request as not verified: back to draft, or, where the repository refuses drafts
 * (known, or learnt from this very refusal), a marked title.
 */
export async function showNotVerified(deps: DraftDeps, pull: ShownPull): Promise<void> {
  if (pull.draft) return;
  if (await deps.store.draftsAllowed(pull)) {
    try {
      await deps.octokit.graphql(convertToDraftMutation, { id: pull.nodeId, request: { signal: deps.signal } });
      deps.log.info({ pr: pull.number }, 'pull request turned back to draft');
      return;
    } catch (error) {
      if (!draftsRefused(error)) throw error;
      await deps.store.rememberDrafts(pull, false);
      deps.log.warn({ pr: pull.number }, 'GitHub refuses drafts on this repository; marking the title instead');
    }
  }
  await setTitle(deps, pull, markedTitle(pull.title));
}

/** Shows the pull request as verified: ready for review, and its title without the mark. */
export async function showVerified(deps: DraftDeps, pull: ShownPull): Promise<void> {
  if (pull.draft) {
    await deps.octokit.graphql(markReadyMutation, { id: pull.nodeId, request: { signal: deps.signal } });
    deps.log.info({ pr: pull.number }, 'pull request marked ready for review');
  }
  if (pull.title !== unmarkedTitle(pull.title)) await setTitle(deps, pull, unmarkedTitle(pull.title));
}

async function setTitle(deps: DraftDeps, pull: ShownPull, title: string): Promise<void> {
  if (title === pull.title) return;
  await deps.octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
    owner: pull.owner,
    repo: pull.repo,
    pull_number: pull.number,
    title,
    request: { signal: deps.signal },
  });
  deps.log.info({ pr: pull.number, title }, 'pull request title marks whether it is verified');
}
