import type { Logger } from 'pino';
import type { InboundOutcome } from '../../src/core/inbound.ts';
import type { Interpretation, StoredDelivery } from '../../src/core/delivery-interpreter.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import { threadKey, type ThreadRef } from '../../src/core/thread-ref.ts';
import { failedConclusions, type CiReport, type WorkRequest } from './webhook-payloads.ts';
import {
  collectCiFailure,
  decideCiFollowUp,
  followUpMessage,
  type CollectedFailure,
  type FollowUpDecision,
} from './ci-follow-up.ts';
import type { PatchbayOctokit } from './github-client.ts';
import { postComment } from './github-comments.ts';
import { postProgressOnce } from './progress-comment-once.ts';
import { sessionMarker } from './render-pull-request.ts';
import { canWrite, placeOf } from './request-access.ts';
import type { InterpreterDeps } from './interpreter-deps.ts';

type GitHubThread = Extract<ThreadRef, { source: 'github' }>;

/**
 * What the reply step says on a pull request once the session service took a CI failure: why no
 * follow-up runs, or the progress comment of the follow-up (a request the replier then edits).
 */
export type CiFailureErrand = {
  kind: 'ci-failure';
  owner: string;
  repo: string;
  number: number;
  installationId: number;
  headSha: string;
  /** The failing jobs' names (or the check's). */
  name: string;
  decision: FollowUpDecision;
  /** Which automatic follow-up this is (1 or 2). */
  attempt: number;
  sessionId: string;
  /** The session's last seq before the failure was appended: the follow-up's progress starts after it. */
  startSeq: number;
};

/**
 * A finished check suite, check run or workflow run. A failure on the head commit of a pull
 * request a session opened becomes a `ci-failed` inbound: a follow-up run with the failing jobs'
 * log excerpts, or the reason there is none (said on the PR by `replyToCiFailure` and in the
 * session's other threads by their repliers).
 */
export async function takeCiReport(
  deps: InterpreterDeps,
  report: CiReport,
  delivery: StoredDelivery,
  signal: AbortSignal,
  log: Logger,
): Promise<Interpretation<CiFailureErrand>> {
  if (!failedConclusions.has(report.conclusion))
    return { kind: 'ignore', reason: `${report.event} ${report.conclusion}` };
  for (const number of report.pullNumbers) {
    const thread: GitHubThread = { source: 'github', owner: report.owner, repo: report.repo, number, kind: 'pull' };
    const session = await deps.context.sessions.findByThread(thread);
    if (!session) continue;
    const octokit = await deps.client.forInstallation(report.installationId);
    const refused = await refuseFollowUp(deps, { report, number, session, octokit, signal });
    if (refused) return { kind: 'ignore', reason: refused };
    const claimed = await deps.store.claimCiFailure({
      owner: report.owner,
      repo: report.repo,
      number,
      headSha: report.headSha,
      sessionId: session.id,
      claimedBy: delivery.dedupeKey,
    });
    if (!claimed)
      return {
        kind: 'ignore',
        reason: `the CI failure on ${report.headSha.slice(0, 12)} was handled by another delivery`,
      };
    const failure = await collectCiFailure(octokit, report, signal);
    return decideFailure(deps, { report, thread, session, failure }, log);
  }
  return { kind: 'ignore', reason: 'not on a pull request a Patchbay session opened' };
}

/** Why a failure on a session's pull request starts nothing at all (not the session's PR, not its head, autofix off). */
async function refuseFollowUp(
  deps: InterpreterDeps,
  input: { report: CiReport; number: number; session: SessionRecord; octokit: PatchbayOctokit; signal: AbortSignal },
): Promise<string | undefined> {
  const { report, number } = input;
  const pull = (
    await input.octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
      owner: report.owner,
      repo: report.repo,
      pull_number: number,
      request: { signal: input.signal },
    })
  ).data;
  if (!(pull.body ?? '').includes(sessionMarker(input.session.id)))
    return `#${number} is not a pull request the session opened`;
  if (pull.state !== 'open') return `#${number} is ${pull.state}`;
  if (pull.head.sha !== report.headSha) return `${report.headSha.slice(0, 12)} is no longer the head of #${number}`;
  if (!(await deps.store.autofix(report.owner, report.repo, number)))
    return `automatic CI fixes are off for #${number}`;
  return undefined;
}

/** Decides and records whether the claimed failure starts a follow-up, and makes its `ci-failed` inbound. */
async function decideFailure(
  deps: InterpreterDeps,
  input: { report: CiReport; thread: GitHubThread; session: SessionRecord; failure: CollectedFailure },
  log: Logger,
): Promise<Interpretation<CiFailureErrand>> {
  const { report, thread, session, failure } = input;
  const where = { owner: report.owner, repo: report.repo, number: thread.number, headSha: report.headSha };
  const earlier = await deps.store.ciFailures(report.owner, report.repo, thread.number, report.headSha);
  const pushed = await deps.context.sessions.events(session.id, { types: ['branch-pushed'] });
  const headIsOurs = pushed.some((e) => e.event.type === 'branch-pushed' && e.event.commit === report.headSha);
  const decision = decideCiFollowUp({
    headIsOurs,
    sessionStatus: session.status,
    earlier,
    signature: failure.signature,
  });
  const names = failure.jobs.map((j) => j.name);
  await deps.store.decideCiFailure({
    ...where,
    followUp: decision.followUp,
    names,
    signature: failure.signature,
    ...(!decision.followUp && { reason: decision.reason }),
  });
  const attempt = earlier.filter((f) => f.followUp).length + 1;
  const name = names.join(', ') || report.name;
  const url = failure.jobs[0]?.url ?? report.url;
  log.info(
    {
      pull: thread.number,
      commit: report.headSha,
      followUp: decision.followUp,
      reason: decision.followUp ? undefined : decision.reason,
    },
    'CI failure on a session pull request',
  );
  return {
    kind: 'inbound',
    inbound: {
      kind: 'ci-failed',
      thread,
      failure: {
        commit: report.headSha,
        pullNumber: thread.number,
        name,
        ...(url && { url }),
        logExcerpt: failure.jobs.map((j) => `${j.name}:\n${j.excerpt}`).join('\n\n'),
        followUp: decision.followUp,
        ...(!decision.followUp && { reason: decision.reason }),
      },
      text: followUpMessage({ number: thread.number, commit: report.headSha, failure, attempt }),
    },
    errand: {
      kind: 'ci-failure',
      ...where,
      installationId: report.installationId,
      name,
      decision,
      attempt,
      sessionId: session.id,
      startSeq: session.lastSeq,
    },
  };
}

/**
 * The session took the CI failure: say on the pull request why nothing follows, or post the
 * follow-up's progress comment for a request the replier edits from then on.
 */
export async function replyToCiFailure(
  deps: InterpreterDeps,
  errand: CiFailureErrand,
  outcome: InboundOutcome,
  signal: AbortSignal,
): Promise<void> {
  if (outcome.kind !== 'appended') return;
  const octokit = await deps.client.forInstallation(errand.installationId);
  const place = { owner: errand.owner, repo: errand.repo, number: errand.number, in: 'issue' as const };
  const what = `CI failed on \`${errand.headSha.slice(0, 12)}\` (${errand.name}).`;
  if (!errand.decision.followUp) {
    await postComment(
      octokit,
      place,
      `${what} I am not fixing it automatically: ${errand.decision.reason}. [Session](${deps.context.publicUrl}/sessions/${errand.sessionId})`,
    );
    return;
  }
  const body = `🔧 ${what} Working on a fix (automatic follow-up ${errand.attempt} of 2).`;
  const thread: ThreadRef = {
    source: 'github',
    owner: errand.owner,
    repo: errand.repo,
    number: errand.number,
    kind: 'pull',
  };
  const requestId = await deps.store.createRequest({
    threadKey: threadKey(thread)!,
    owner: errand.owner,
    repo: errand.repo,
    number: errand.number,
    commentKind: 'issue',
    commentId: null,
    replyTo: null,
    startSeq: errand.startSeq,
    lastBody: body,
  });
  // The replier may be called for the follow-up's first events while this post is under way: it
  // awaits the post through `comments` (a failure here retries the delivery, as before). Posted
  // once: a lost answer is looked for in the thread before posting again.
  const target = { id: requestId, owner: errand.owner, repo: errand.repo, number: errand.number, lastBody: body };
  await deps.comments.post(requestId, async () => {
    await deps.store.updateRequest(requestId, { sessionId: errand.sessionId });
    const botLogin = (await deps.client.identity()).login;
    const once = { octokit, botLogin, store: deps.store, log: deps.log };
    return postProgressOnce(once, { ...target, commentKind: 'issue', replyTo: null }, signal);
  });
}

/** `@bot autofix off|on` on a pull request: whether CI failures start follow-up runs there. */
export async function setAutofix(
  deps: InterpreterDeps,
  request: WorkRequest,
  enabled: boolean,
  log: Logger,
): Promise<Interpretation<never>> {
  const octokit = await deps.client.forInstallation(request.installationId);
  const place = placeOf(request);
  const who = `@${request.sender.login}`;
  if (!(await canWrite(octokit, request))) {
    await postComment(
      octokit,
      place,
      `${who} Sorry, only people with write access to ${request.owner}/${request.repo} can change that.`,
    );
    return { kind: 'ignore', reason: `${request.sender.login} has no write access` };
  }
  await deps.store.setAutofix(request.owner, request.repo, request.number, enabled, request.sender.login);
  const bot = await deps.client.identity();
  log.info({ pull: request.number, enabled }, 'CI autofix switched');
  await postComment(
    octokit,
    place,
    enabled
      ? `${who} Automatic CI fixes are on for this pull request: when CI fails on a commit I pushed, I try to fix it (at most twice).`
      : `${who} Automatic CI fixes are off for this pull request. \`${bot.mention} autofix on\` turns them back on.`,
  );
  return { kind: 'ignore', reason: `autofix ${enabled ? 'on' : 'off'} for #${request.number}` };
}

/**
 * A check that failed on a session's pull request passed on the same commit (a re-run, nothing
 * changed): a lesson that it is flaky, for later runs on the repository.
 */
export async function noteFlaky(deps: InterpreterDeps, report: CiReport, log: Logger): Promise<Interpretation<never>> {
  for (const number of report.pullNumbers) {
    const session = await deps.context.sessions.findByThread({
      source: 'github',
      owner: report.owner,
      repo: report.repo,
      number,
      kind: 'pull',
    });
    if (!session) continue;
    const failed = await deps.store.ciFailureAt(report.owner, report.repo, number, report.headSha);
    if (!failed) continue;
    const names = report.event === 'check_run' ? failed.names.filter((n) => n === report.name) : failed.names;
    if (names.length === 0) continue;
    const text = `${names.map((n) => `\`${n}\``).join(', ')} in GitHub CI failed and then passed on the same commit with nothing changed, so it is likely flaky: check a re-run before changing code for its failures.`;
    await deps.context.addLesson(session.repo, text);
    log.info({ pull: number, commit: report.headSha, names }, 'flaky CI check recorded as a lesson');
    return { kind: 'ignore', reason: `flaky check recorded: ${names.join(', ')}` };
  }
  return { kind: 'ignore', reason: `${report.event} success` };
}
