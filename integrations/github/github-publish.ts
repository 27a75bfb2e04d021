import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import type { PublishInput, PublishedPullRequest, Publisher } from '../../src/core/publisher.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { GitHubClient, PatchbayOctokit } from './github-client.ts';
import { parseRepoUrl } from '../../src/core/repo-ref.ts';
import type { GitHubStore } from './github-store.ts';
import { pullRequestBody, pullRequestTitle, sessionMarker } from './render-pull-request.ts';
import { renderEvidence } from '../../src/core/evidence.ts';
import { applyGate } from './publish-gate.ts';
import { draftsRefused, markedTitle } from './pull-drafts.ts';
import type { SecretBox } from './secret-box.ts';
import type { SessionFamily } from '../../src/core/session-family.ts';
import type { OutcomeLedger } from '../../src/core/pull-outcome.ts';
import type { SessionLookup } from '../../src/core/session-lookup.ts';
import { checkBeforeOpen } from './pre-open-check.ts';
import { conventionalTitle } from './scout-title.ts';
import { familySection, linkFamilyPulls, otherFamilyPulls, withFamilySection } from './linked-pulls.ts';

type PublishDeps = {
  client: GitHubClient;
  store: GitHubStore;
  context: Pick<IntegrationContext, 'publicUrl'> & {
    sessions: Pick<SessionLookup, 'events' | 'threads' | 'addThread'>;
    outcomes: Pick<OutcomeLedger, 'opened'>;
  };
  box?: SecretBox;
  gitUrl: string;
  draft: boolean;
  log: Logger;
  /** The session's family: its pull requests on other repositories link each other. */
  family?: SessionFamily | undefined;
};

/** A pull request as publishing reads it; `ours` when Patchbay opened it (its description is Patchbay's). */
type PublishedPull = { url: string; number: number; nodeId: string; draft: boolean; ours: boolean; title: string };

/** What opening or updating one pull request reads. */
type PullContext = {
  deps: PublishDeps;
  input: PublishInput;
  where: { owner: string; repo: string };
  appOctokit: PatchbayOctokit;
  body: string;
  request: { signal: AbortSignal };
  log: Logger;
};

/**
 * The harness's publish hook for GitHub repositories: opens the session branch's pull request, or
 * updates the one already open for that branch (so follow-up runs land in the same PR). It acts as
 * the requester when they connected their GitHub account, else as the App. A PR Patchbay did not
 * open (someone's own PR it was asked to work on) keeps its description. The PR becomes one of the
 * session's threads, so comments on it reach the session.
 */
export function createPublisher(deps: PublishDeps): Publisher {
  return {
    name: 'github',
    publish: (input) => publish(deps, input),
    checkBeforeOpen: (input) => checkBeforeOpen(deps, input),
  };
}

async function publish(deps: PublishDeps, input: PublishInput): Promise<PublishedPullRequest | undefined> {
  const repo = parseRepoUrl(input.session.repo, deps.gitUrl);
  if (!repo) return undefined;
  const where = { owner: repo.owner, repo: repo.repo };
  const sessionUrl = `${deps.context.publicUrl}/sessions/${input.session.id}`;
  const pull: PullContext = {
    deps,
    input,
    where,
    appOctokit: await deps.client.forRepo(repo),
    body: withFamilySection(
      await describePull(deps, input, where, sessionUrl),
      familySection(await otherFamilyPulls(deps.family, input.session.id)),
    ),
    request: { signal: input.signal },
    log: deps.log.child({ sessionId: input.session.id }),
  };
  const { data: open } = await pull.appOctokit.request('GET /repos/{owner}/{repo}/pulls', {
    ...where,
    head: `${repo.owner}:${input.branch}`,
    state: 'open',
    per_page: 10,
    request: pull.request,
  });
  const existing = open.find((pr) => pr.head.ref === input.branch);
  const pr = existing ? await updatePull(pull, existing) : await openPull(pull);
  await deps.context.sessions.addThread(input.session.id, {
    source: 'github',
    ...where,
    number: pr.number,
    kind: 'pull',
  });
  if (pr.ours)
    await deps.context.outcomes.opened({
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
    await applyGate(pull.appOctokit, {
      ...where,
      sha: input.commit,
      pr,
      gate: input.gate,
      sessionUrl,
      store: deps.store,
      signal: input.signal,
      log: pull.log,
    });
  if (deps.family && pr.ours)
    await linkFamilyPulls(
      { client: deps.client, family: deps.family, gitUrl: deps.gitUrl, log: pull.log },
      { sessionId: input.session.id, repo: input.session.repo, url: pr.url },
      input.signal,
    );
  return { url: pr.url, number: pr.number };
}

/** The pull request's description: the session's summary, its work, the issues it fixes, the gate's evidence. */
async function describePull(
  deps: PublishDeps,
  input: PublishInput,
  repo: { owner: string; repo: string },
  sessionUrl: string,
): Promise<string> {
  const { context } = deps;
  const events = await context.sessions.events(input.session.id, {
    types: ['diff-updated', 'tool-start', 'tool-end', 'check-finished', 'user-message'],
  });
  const fixes = (await context.sessions.threads(input.session.id))
    .filter((t): t is Extract<ThreadRef, { source: 'github' }> => t.source === 'github' && t.kind === 'issue')
    .filter(
      (t) => t.owner.toLowerCase() === repo.owner.toLowerCase() && t.repo.toLowerCase() === repo.repo.toLowerCase(),
    )
    .map((t) => t.number);
  return pullRequestBody({
    session: input.session,
    summary: input.summary,
    events,
    sessionUrl,
    fixes,
    ...(input.gate && { evidence: renderEvidence(input.gate) }),
  });
}

/** The requester's own client, when they connected their GitHub account and its token still opens. */
async function asRequester(deps: PublishDeps, input: PublishInput, log: Logger): Promise<PatchbayOctokit | undefined> {
  if (!deps.box) return undefined;
  const requester = input.session.requester;
  const stored = await deps.store.userToken(`${requester.source}:${requester.id}`);
  if (!stored) return undefined;
  try {
    return deps.client.forUser(deps.box.open(stored.ciphertext));
  } catch (error) {
    log.warn({ err: error }, "the requester's stored GitHub token could not be used; opening the PR as the App");
    return undefined;
  }
}

/** The branch's open pull request: its description rewritten when Patchbay opened it, else left alone. */
async function updatePull(
  pull: PullContext,
  existing: { number: number; html_url: string; node_id: string; draft?: boolean; body: string | null; title: string },
): Promise<PublishedPull> {
  const ours = (existing.body ?? '').includes(sessionMarker(pull.input.session.id));
  if (ours) {
    const user = await asRequester(pull.deps, pull.input, pull.log);
    const update = (octokit: PatchbayOctokit) =>
      octokit.request('PATCH /repos/{owner}/{repo}/pulls/{pull_number}', {
        ...pull.where,
        pull_number: existing.number,
        body: pull.body,
        request: pull.request,
      });
    await update(user ?? pull.appOctokit).catch(async (error: unknown) => {
      if (!user) throw error;
      pull.log.warn({ err: error }, 'could not update the PR as the requester; updating it as the App');
      await update(pull.appOctokit);
    });
  }
  return {
    url: existing.html_url,
    number: existing.number,
    nodeId: existing.node_id,
    draft: existing.draft ?? false,
    ours,
    title: existing.title,
  };
}

type OpenParams = {
  owner: string;
  repo: string;
  title: string;
  head: string;
  base: string;
  body: string;
  draft: boolean;
  request: { signal: AbortSignal };
};

/**
 * Opens the branch's pull request, as the requester or else as the App: a draft when configured or
 * gated, unless the repository's plan refuses drafts (known, or learnt from GitHub's 422 here). A
 * PR that wanted to be a draft and cannot be opens ready with a marked title instead.
 */
async function openPull(pull: PullContext): Promise<PublishedPull> {
  const { input, deps, log } = pull;
  const title = conventionalTitle(pullRequestTitle(input.session, (await deps.client.identity()).mention), input.rules);
  const wantsDraft = deps.draft || input.gate !== undefined;
  const drafts = wantsDraft && (await deps.store.draftsAllowed(pull.where));
  const params = (draft: boolean): OpenParams => ({
    ...pull.where,
    title: wantsDraft && !draft ? markedTitle(title) : title,
    head: input.branch,
    base: input.baseBranch,
    body: pull.body,
    draft,
    request: pull.request,
  });
  const user = await asRequester(deps, input, log);
  const created = await openAs(pull, user, params(drafts)).catch(async (error: unknown) => {
    if (!drafts || !draftsRefused(error)) throw nothingToReview(pull, error);
    await deps.store.rememberDrafts(pull.where, false);
    log.warn({ repo: pull.where }, 'GitHub refuses draft pull requests on this repository; opening it ready');
    return openAs(pull, user, params(false)).catch((again: unknown) => {
      throw nothingToReview(pull, again);
    });
  });
  const pr = {
    url: created.html_url,
    number: created.number,
    nodeId: created.node_id,
    draft: created.draft ?? false,
    ours: true,
    title: created.title,
  };
  log.info({ pr: pr.url, asUser: user !== undefined }, 'pull request opened');
  return pr;
}

/** POST the pull request as the requester, falling back to the App unless GitHub's refusal is about the PR itself. */
async function openAs(pull: PullContext, user: PatchbayOctokit | undefined, params: OpenParams) {
  try {
    return await postPull(pull, user ?? pull.appOctokit, params);
  } catch (error) {
    if (!user || noCommitsBetween(error) || draftsRefused(error)) throw error;
    pull.log.warn({ err: error }, 'could not open the PR as the requester; opening it as the App');
    return await postPull(pull, pull.appOctokit, params);
  }
}

/**
 * One POST of the pull request. When GitHub created it but its answer was lost, Octokit's retry
 * meets 422 "A pull request already exists": the open PR of this head with exactly this title and
 * body is the one this POST made, and is taken as its answer (any other PR on the head is not).
 */
async function postPull(pull: PullContext, octokit: PatchbayOctokit, params: OpenParams) {
  try {
    return (await octokit.request('POST /repos/{owner}/{repo}/pulls', params)).data;
  } catch (error) {
    if (!pullAlreadyExists(error)) throw error;
    const { data: open } = await pull.appOctokit.request('GET /repos/{owner}/{repo}/pulls', {
      owner: params.owner,
      repo: params.repo,
      head: `${params.owner}:${params.head}`,
      state: 'open',
      request: params.request,
    });
    const made = open.find((p) => p.title === params.title && (p.body ?? '') === params.body);
    if (!made) throw error;
    pull.log.warn({ pr: made.html_url }, "the pull request's answer was lost; GitHub had opened it");
    return made;
  }
}

/** GitHub's 422 for a head that already has an open pull request. */
function pullAlreadyExists(error: unknown): boolean {
  const { status, response } = error as {
    status?: number;
    response?: { data?: { errors?: Array<{ message?: string }> } };
  };
  return (
    status === 422 && (response?.data?.errors ?? []).some((e) => /^A pull request already exists/.test(e.message ?? ''))
  );
}

/** GitHub's 422 for a head its base already contains (merged meanwhile) becomes "nothing to review"; others pass. */
function nothingToReview(pull: PullContext, error: unknown): unknown {
  if (!noCommitsBetween(error)) return error;
  const { input } = pull;
  return new PatchbayError(
    'conflict',
    `No pull request opened: ${pull.where.owner}/${pull.where.repo} branch ${input.branch} has no commits that ${input.baseBranch} does not already have (its changes are already in ${input.baseBranch}), so there is nothing to review.`,
    { cause: error },
  );
}

/** GitHub's 422 "No commits between <base> and <head>" when opening a pull request. */
function noCommitsBetween(error: unknown): boolean {
  const { status, response } = error as {
    status?: number;
    response?: { data?: { errors?: Array<{ message?: string }> } };
  };
  return status === 422 && (response?.data?.errors ?? []).some((e) => /^No commits between /.test(e.message ?? ''));
}
