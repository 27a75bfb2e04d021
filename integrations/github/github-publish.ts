import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import type { PublishInput, PublishedPullRequest } from '../../src/core/publisher.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { GitHubClient, PatchbayOctokit } from './github-client.ts';
import { parseRepoUrl } from '../../src/core/repo-ref.ts';
import type { GitHubStore } from './github-store.ts';
import { pullRequestBody, pullRequestTitle, sessionMarker } from './render-pull-request.ts';
import { renderEvidence, type GateDecision } from '../../src/core/evidence.ts';
import type { SecretBox } from './secret-box.ts';

/**
 * The harness's publish hook for GitHub repositories: opens the session branch's pull request, or
 * updates the one already open for that branch (so follow-up runs land in the same PR). It acts as
 * the requester when they connected their GitHub account, else as the App. A PR Patchbay did not
 * open (someone's own PR it was asked to work on) keeps its description. The PR becomes one of the
 * session's threads, so comments on it reach the session.
 */
export function createPublisher(deps: {
  client: GitHubClient;
  store: GitHubStore;
  context: IntegrationContext;
  box?: SecretBox;
  gitUrl: string;
  draft: boolean;
  log: Logger;
}) {
  const { client, store, context } = deps;

  async function asRequester(input: PublishInput, log: Logger): Promise<PatchbayOctokit | undefined> {
    if (!deps.box) return undefined;
    const requester = input.session.requester;
    const stored = await store.userToken(`${requester.source}:${requester.id}`);
    if (!stored) return undefined;
    try {
      return client.forUser(deps.box.open(stored.ciphertext));
    } catch (error) {
      log.warn({ err: error }, "the requester's stored GitHub token could not be used; opening the PR as the App");
      return undefined;
    }
  }

  return async function publish(input: PublishInput): Promise<PublishedPullRequest | undefined> {
    const repo = parseRepoUrl(input.session.repo, deps.gitUrl);
    if (!repo) return undefined;
    const log = deps.log.child({ sessionId: input.session.id });
    const where = { owner: repo.owner, repo: repo.repo };
    const request = { signal: input.signal };
    const appOctokit = await client.forRepo(repo);
    const bot = await client.identity();
    const events = await context.sessionEvents(input.session.id, [
      'diff-updated',
      'tool-start',
      'tool-end',
      'check-finished',
      'user-message',
    ]);
    const fixes = (await context.sessionThreads(input.session.id))
      .filter((t): t is Extract<ThreadRef, { source: 'github' }> => t.source === 'github' && t.kind === 'issue')
      .filter(
        (t) => t.owner.toLowerCase() === repo.owner.toLowerCase() && t.repo.toLowerCase() === repo.repo.toLowerCase(),
      )
      .map((t) => t.number);
    const sessionUrl = `${context.publicUrl}/sessions/${input.session.id}`;
    const body = pullRequestBody({
      session: input.session,
      summary: input.summary,
      events,
      sessionUrl,
      fixes,
      ...(input.gate && { evidence: renderEvidence(input.gate) }),
    });

    const { data: open } = await appOctokit.request('GET /repos/{owner}/{repo}/pulls', {
      ...where,
      head: `${repo.owner}:${input.branch}`,
      state: 'open',
      per_page: 10,
      request,
    });
    const existing = open.find((pr) => pr.head.ref === input.branch);
    let pr: { url: string; number: number; nodeId: string; draft: boolean; ours: boolean };
    if (existing) {
      if ((existing.body ?? '').includes(sessionMarker(input.session.id))) {
        const user = await asRequester(input, log);
        await (user ?? appOctokit)
          .request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
            ...where,
            pull_number: existing.number,
            body,
            request,
          })
          .catch(async (error: unknown) => {
            if (!user) throw error;
            log.warn({ err: error }, 'could not update the PR as the requester; updating it as the App');
            await appOctokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
              ...where,
              pull_number: existing.number,
              body,
              request,
            });
          });
      }
      pr = {
        url: existing.html_url,
        number: existing.number,
        nodeId: existing.node_id,
        draft: existing.draft ?? false,
        ours: (existing.body ?? '').includes(sessionMarker(input.session.id)),
      };
    } else {
      const params = {
        ...where,
        title: pullRequestTitle(input.session, bot.mention),
        head: input.branch,
        base: input.baseBranch,
        body,
        draft: deps.draft || input.gate !== undefined,
        request,
      };
      const user = await asRequester(input, log);
      const openAsRequesterOrApp = async () => {
        try {
          return (await (user ?? appOctokit).request('POST /repos/{owner}/{repo}/pulls', params)).data;
        } catch (error) {
          if (!user || noCommitsBetween(error)) throw error;
          log.warn({ err: error }, 'could not open the PR as the requester; opening it as the App');
          return (await appOctokit.request('POST /repos/{owner}/{repo}/pulls', params)).data;
        }
      };
      const created = await openAsRequesterOrApp().catch((error: unknown) => {
        if (!noCommitsBetween(error)) throw error;
        // GitHub's 422 for a head its base already contains (merged meanwhile): nothing to review.
        throw new PatchbayError(
          'conflict',
          `No pull request opened: ${repo.owner}/${repo.repo} branch ${input.branch} has no commits that ${input.baseBranch} does not already have (its changes are already in ${input.baseBranch}), so there is nothing to review.`,
          { cause: error },
        );
      });
      pr = {
        url: created.html_url,
        number: created.number,
        nodeId: created.node_id,
        draft: created.draft ?? false,
        ours: true,
      };
      log.info({ pr: pr.url, asUser: user !== undefined }, 'pull request opened');
    }
    await context.addThread(input.session.id, {
      source: 'github',
      owner: repo.owner,
      repo: repo.repo,
      number: pr.number,
      kind: 'pull',
    });
    if (pr.ours)
      await context.outcomes.opened({
        ...where,
        number: pr.number,
        sessionId: input.session.id,
        url: pr.url,
        branch: input.branch,
        baseBranch: input.baseBranch,
        commit: input.commit,
        at: new Date(),
      });
    if (input.gate)
      await applyGate(appOctokit, {
        ...where,
        sha: input.commit,
        pr,
        gate: input.gate,
        sessionUrl,
        signal: input.signal,
        log,
      });
    return { url: pr.url, number: pr.number };
  };
}

/**
 * The gate on GitHub: a `patchbay/verify` commit status on the exact head SHA (so branch protection
 * can require it), and the draft state: ready for review only when this SHA passed, back to draft
 * otherwise. REST cannot change draft state; GraphQL can. Only PRs Patchbay opened change state.
 * The PR's head is read right before and right after marking it ready: a head that moved (a person
 * or anything else pushed meanwhile) is not what passed, so the PR stays or turns draft and the new
 * head gets a failing status that says it was not verified.
 */
async function applyGate(
  octokit: PatchbayOctokit,
  input: {
    owner: string;
    repo: string;
    sha: string;
    pr: { number: number; nodeId: string; draft: boolean; ours: boolean };
    gate: GateDecision;
    sessionUrl: string;
    signal: AbortSignal;
    log: Logger;
  },
): Promise<void> {
  const { gate, pr } = input;
  const request = { signal: input.signal };
  const status = (sha: string, ready: boolean, description: string) =>
    octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
      owner: input.owner,
      repo: input.repo,
      sha,
      state: ready ? 'success' : 'failure',
      context: verifyStatusContext,
      target_url: input.sessionUrl,
      description: description.slice(0, 140),
      request,
    });
  const head = async () =>
    (
      await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
        owner: input.owner,
        repo: input.repo,
        pull_number: pr.number,
        request,
      })
    ).data.head.sha;
  const moved = async (sha: string) => {
    input.log.warn(
      { pr: pr.number, verified: input.sha, head: sha },
      'the pull request head moved past the verified commit',
    );
    await status(sha, false, `Not verified: pushed after Patchbay verified ${input.sha.slice(0, 12)}`);
  };
  await status(input.sha, gate.ready, gate.ready ? 'Checks and review passed' : gate.reasons.join('; '));
  if (!pr.ours) return;
  if (gate.ready) {
    const before = await head();
    if (before !== input.sha) {
      await moved(before);
      if (!pr.draft) await octokit.graphql(convertToDraft, { id: pr.nodeId, request });
      return;
    }
    if (pr.draft) {
      await octokit.graphql(markReady, { id: pr.nodeId, request });
      input.log.info({ pr: pr.number, sha: input.sha }, 'pull request marked ready for review');
    }
    const after = await head();
    if (after !== input.sha) {
      await octokit.graphql(convertToDraft, { id: pr.nodeId, request });
      await moved(after);
    }
  } else if (!pr.draft) {
    await octokit.graphql(convertToDraft, { id: pr.nodeId, request });
    input.log.info({ pr: pr.number, sha: input.sha }, 'pull request turned back to draft');
  }
}

export const verifyStatusContext = 'patchbay/verify';

const markReady = `mutation($id: ID!) {
  markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { id isDraft } }
}`;
export const convertToDraft = `mutation($id: ID!) {
  convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { id isDraft } }
}`;

/** GitHub's 422 "No commits between <base> and <head>" when opening a pull request. */
function noCommitsBetween(error: unknown): boolean {
  const { status, response } = error as {
    status?: number;
    response?: { data?: { errors?: Array<{ message?: string }> } };
  };
  return status === 422 && (response?.data?.errors ?? []).some((e) => /^No commits between /.test(e.message ?? ''));
}
