import type { Logger } from 'pino';
import type { GateDecision } from '../../src/core/evidence.ts';
import type { PatchbayOctokit } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';
import { showNotVerified, showVerified, type DraftDeps, type ShownPull } from './pull-drafts.ts';

export const verifyStatusContext = 'patchbay/verify';

export type GateInput = {
  owner: string;
  repo: string;
  sha: string;
  pr: { number: number; nodeId: string; draft: boolean; ours: boolean; title: string };
  gate: GateDecision;
  sessionUrl: string;
  store: GitHubStore;
  signal: AbortSignal;
  log: Logger;
};

/**
 * The gate on GitHub: a `patchbay/verify` commit status on the exact head SHA (so branch protection
 * can require it), and the PR's shown state: ready for review only when this SHA passed, back to
 * draft otherwise (or, where the plan refuses drafts, a marked title). REST cannot change draft
 * state; GraphQL can. Only PRs Patchbay opened change state.
 */
export async function applyGate(octokit: PatchbayOctokit, input: GateInput): Promise<void> {
  const { gate, pr } = input;
  await setVerifyStatus(
    octokit,
    input,
    input.sha,
    gate.ready,
    gate.ready ? 'Checks and review passed' : gate.reasons.join('; '),
  );
  if (!pr.ours) return;
  if (gate.ready) return markReady(octokit, input);
  await showNotVerified(draftDeps(octokit, input), shown(input, pr));
}

function draftDeps(octokit: PatchbayOctokit, input: GateInput): DraftDeps {
  return { octokit, store: input.store, signal: input.signal, log: input.log };
}

function shown(input: GateInput, pr: { number: number; nodeId: string; draft: boolean; title: string }): ShownPull {
  return {
    owner: input.owner,
    repo: input.repo,
    number: pr.number,
    nodeId: pr.nodeId,
    draft: pr.draft,
    title: pr.title,
  };
}

/**
 * Marks a passed PR ready for review, reading its head right before and right after: a head that
 * moved (a person or anything else pushed meanwhile) is not what passed, so the PR stays or turns
 * not verified and the new head gets a failing status that says it was not verified.
 */
async function markReady(octokit: PatchbayOctokit, input: GateInput): Promise<void> {
  const deps = draftDeps(octokit, input);
  const before = await pullNow(octokit, input);
  if (before.sha !== input.sha) {
    await headMoved(octokit, input, before.sha);
    await showNotVerified(deps, shown(input, { ...input.pr, ...before }));
    return;
  }
  await showVerified(deps, shown(input, { ...input.pr, ...before }));
  const after = await pullNow(octokit, input);
  if (after.sha !== input.sha) {
    await showNotVerified(deps, shown(input, { ...input.pr, ...after }));
    await headMoved(octokit, input, after.sha);
  }
}

export function setVerifyStatus(
  octokit: PatchbayOctokit,
  input: Pick<GateInput, 'owner' | 'repo' | 'sessionUrl' | 'signal'>,
  sha: string,
  ready: boolean,
  description: string,
) {
  return octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
    owner: input.owner,
    repo: input.repo,
    sha,
    state: ready ? 'success' : 'failure',
    context: verifyStatusContext,
    target_url: input.sessionUrl,
    description: description.slice(0, 140),
    request: { signal: input.signal },
  });
}

/** The pull request as GitHub has it now: its head, draft state and title (a person may have changed them). */
async function pullNow(
  octokit: PatchbayOctokit,
  input: GateInput,
): Promise<{ sha: string; draft: boolean; title: string }> {
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
    owner: input.owner,
    repo: input.repo,
    pull_number: input.pr.number,
    request: { signal: input.signal },
  });
  return { sha: data.head.sha, draft: data.draft ?? false, title: data.title };
}

async function headMoved(octokit: PatchbayOctokit, input: GateInput, sha: string): Promise<void> {
  input.log.warn(
    { pr: input.pr.number, verified: input.sha, head: sha },
    'the pull request head moved past the verified commit',
  );
  await setVerifyStatus(
    octokit,
    input,
    sha,
    false,
    `Not verified: pushed after Patchbay verified ${input.sha.slice(0, 12)}`,
  );
}
