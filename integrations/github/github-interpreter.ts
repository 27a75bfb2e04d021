import type { Logger } from 'pino';
import { z } from 'zod';
import type { Actor } from '../../src/core/actor.ts';
import type { Inbound, InboundOutcome } from '../../src/core/inbound.ts';
import type { DeliveryInterpreter, Interpretation, StoredDelivery } from '../../src/core/delivery-interpreter.ts';
import { repoUrl } from '../../src/core/repo-ref.ts';
import { threadKey, type ThreadRef } from '../../src/core/thread-ref.ts';
import { classifyOutcome } from './classify-outcome.ts';
import { classifyWebhook } from './classify-webhook.ts';
import { recordOutcome } from './outcome-tracker.ts';
import { PullRequest, type WorkRequest } from './webhook-payloads.ts';
import { noteFlaky, replyToCiFailure, setAutofix, takeCiReport, type CiFailureErrand } from './ci-report.ts';
import type { PatchbayOctokit } from './github-client.ts';
import { addEyes, postComment, type CommentPlace } from './github-comments.ts';
import { threadCommand } from './thread-commands.ts';
import { withGitHubImages } from './github-images.ts';
import { recordInstallation } from './installation-events.ts';
import { notePullClosed, notePullPushed } from './pull-events.ts';
import { canWrite, placeOf } from './request-access.ts';
import type { InterpreterDeps } from './interpreter-deps.ts';
import { postProgressOnce, type ProgressTarget } from './progress-comment-once.ts';

/** A `@bot stop` was handed to the session service: the reply says what it stopped. */
export type StopErrand = { kind: 'stop'; installationId: number; place: CommentPlace; who: string };

/**
 * A request was handed to the session service: if a session took it, the request is bound to the
 * session and gets its 👀 and its progress comment (which the replier edits from then on).
 */
export type ProgressErrand = {
  kind: 'progress';
  requestId: number;
  installationId: number;
  place: CommentPlace;
  who: string;
  react?: WorkRequest['react'];
};

/** What GitHub's reply step does once the session service handled a delivery's Inbound. */
export type GitHubErrand = StopErrand | ProgressErrand | CiFailureErrand;

export type GitHubInterpreter = DeliveryInterpreter<GitHubErrand> & { stop(): Promise<void> };

/**
 * GitHub's interpreter, as the pipeline drives it after the ack: installation bookkeeping,
 * requests for work (permission check, hand-off to the session service, then the request's 👀 and
 * progress comment in the reply step), CI follow-ups and pull request outcomes. Every step is safe
 * to repeat on a retry.
 */
export function createGitHubInterpreter(deps: InterpreterDeps): GitHubInterpreter {
  return {
    source: 'github',
    interpret: (delivery, signal) => interpretDelivery(deps, delivery, signal),
    reply: (errand, outcome, signal) => replyToErrand(deps, errand, outcome, signal),
    tellFailure: (delivery, reason, signal) => tellFailure(deps, delivery, reason, signal),
    // The progress comments still being posted.
    stop: () => deps.comments.settled(),
  };
}

function parsePayload(delivery: StoredDelivery): Record<string, unknown> | undefined {
  try {
    const payload = z.record(z.string(), z.unknown()).safeParse(JSON.parse(delivery.body));
    return payload.success ? payload.data : undefined;
  } catch {
    return undefined;
  }
}

/** What a delivery means, by event family (see `classifyWebhook`). */
async function interpretDelivery(
  deps: InterpreterDeps,
  delivery: StoredDelivery,
  signal: AbortSignal,
): Promise<Interpretation<GitHubErrand>> {
  const log = deps.log.child({ deliveryId: delivery.deliveryId, event: delivery.kind });
  const payload = parsePayload(delivery);
  if (!payload) return { kind: 'ignore', reason: 'the body is not a JSON object' };
  const bot = await deps.client.identity();
  // What it says of sessions' pull requests (merged, closed, reverted) is recorded first; then it
  // means what it always meant (a request, a lesson, a CI follow-up, or nothing).
  await recordOutcome(classifyOutcome(delivery.kind, payload, bot), deps.context.outcomes, deps.log);
  const classified = classifyWebhook(delivery.kind, payload, bot, deps.triggerLabel);
  switch (classified.kind) {
    case 'ignore':
      return { kind: 'ignore', reason: classified.reason };
    case 'broken':
      log.warn({ reason: classified.reason }, 'webhook payload not understood; dropped');
      return { kind: 'ignore', reason: `payload not understood: ${classified.reason}` };
    case 'installation':
      await recordInstallation(deps.store, delivery.kind, payload, log);
      return { kind: 'ignore', reason: 'installation bookkeeping recorded' };
    case 'work':
      return takeRequest(deps, classified.request, log, { attempt: delivery.attempt, signal });
    case 'autofix':
      return setAutofix(deps, classified.request, classified.enabled, log);
    case 'ci':
      return classified.report.conclusion === 'success'
        ? noteFlaky(deps, classified.report, log)
        : takeCiReport(deps, classified.report, delivery, signal, log);
    case 'pull-closed':
      return notePullClosed(deps, classified.closed, signal, log);
    case 'pull-pushed':
      return notePullPushed(deps, classified.pushed, signal, log);
    default: {
      const _never: never = classified;
      return _never;
    }
  }
}

/** The reply step: what the errand `interpret` made says to post, given what the session service did. */
async function replyToErrand(
  deps: InterpreterDeps,
  errand: GitHubErrand,
  outcome: InboundOutcome,
  signal: AbortSignal,
): Promise<void> {
  switch (errand.kind) {
    case 'stop':
      return replyToStop(deps, errand, outcome);
    case 'progress':
      return replyToRequest(deps, errand, outcome);
    case 'ci-failure':
      return replyToCiFailure(deps, errand, outcome, signal);
    default: {
      const _never: never = errand;
      return _never;
    }
  }
}

function githubThread(request: WorkRequest): ThreadRef {
  return { source: 'github', owner: request.owner, repo: request.repo, number: request.number, kind: request.kind };
}

function actorOf(request: WorkRequest): Actor {
  return {
    source: 'github',
    id: String(request.sender.id),
    name: request.sender.login,
    githubLogin: request.sender.login,
    email: `${request.sender.id}+${request.sender.login}@users.noreply.github.com`,
  };
}

/**
 * A request for work (a mention in a comment, a review, the trigger label): refused without write
 * access or on a fork's pull request; else `@bot stop`, or a request recorded with
 * `createRequest` and handed on as a `start` (an `answer` when the session waits on a question).
 */
async function takeRequest(
  deps: InterpreterDeps,
  request: WorkRequest,
  log: Logger,
  work: DeliveryWork,
): Promise<Interpretation<GitHubErrand>> {
  const octokit = await deps.client.forInstallation(request.installationId);
  const place = placeOf(request);
  const who = `@${request.sender.login}`;
  if (!(await canWrite(octokit, request))) {
    log.info({ user: request.sender.login }, 'request from a user without write access refused');
    await postComment(
      octokit,
      place,
      `${who} Sorry, only people with write access to ${request.owner}/${request.repo} can ask me to make changes here.`,
    );
    return { kind: 'ignore', reason: `${request.sender.login} has no write access` };
  }
  if (request.stop) {
    return {
      kind: 'inbound',
      inbound: { kind: 'stop', thread: githubThread(request), actor: actorOf(request) },
      errand: { kind: 'stop', installationId: request.installationId, place, who },
    };
  }
  const pull = request.kind === 'pull' ? await pullOf(octokit, request) : undefined;
  if (pull && !fromThisRepo(pull, request)) {
    await postComment(
      octokit,
      place,
      `${who} I can't work on this pull request: its branch lives in a fork (${pull.head.repo?.full_name ?? 'a deleted repository'}), and I only push to branches of ${request.owner}/${request.repo}. Push the branch here, or open an issue and mention me there.`,
    );
    return { kind: 'ignore', reason: 'the pull request comes from a fork' };
  }
  return startRequest(deps, request, pull, work);
}

/** The pull request a request is on, from the payload or else from GitHub. */
async function pullOf(octokit: PatchbayOctokit, request: WorkRequest): Promise<PullRequest> {
  if (request.pull) return request.pull;
  const { data } = await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
    owner: request.owner,
    repo: request.repo,
    pull_number: request.number,
  });
  return PullRequest.parse(data);
}

/** Whether a pull request's branch lives in the repository itself (Patchbay does not push to forks). */
function fromThisRepo(pull: PullRequest, request: WorkRequest): boolean {
  const base = `${request.owner}/${request.repo}`.toLowerCase();
  return pull.head.repo !== null && pull.head.repo.full_name.toLowerCase() === base;
}

/** Records the request (no comment yet, its progress from the session's last seq) and makes its Inbound. */
async function startRequest(
  deps: InterpreterDeps,
  request: WorkRequest,
  pull: PullRequest | undefined,
  work: DeliveryWork,
): Promise<Interpretation<GitHubErrand>> {
  const thread = githubThread(request);
  const actor = actorOf(request);
  const place = placeOf(request);
  const who = `@${request.sender.login}`;
  const existing = await deps.context.sessions.findByThread(thread);
  // The request is recorded, then handed to the session service, and only then acknowledged on
  // GitHub: comment writes are throttled (GitHub asks for a second between them), and the run
  // should not wait for them. Replies await the progress comment (see ProgressComments).
  const requestId = await deps.store.createRequest({
    threadKey: threadKey(thread)!,
    owner: request.owner,
    repo: request.repo,
    number: request.number,
    commentKind: place.in,
    commentId: null,
    replyTo: place.in === 'review' ? place.id : null,
    startSeq: existing?.lastSeq ?? 0,
    lastBody: `👀 On it, ${who}.`,
  });
  // `@bot approve`, `@bot allow <host> for this session`: the comment's first paragraph after its
  // leading mentions (the text is quoted after it).
  const said = request.text.split(/\n\s*\n/)[0]!.replace(/^\s*(@[\w.-]+(\[bot\])?[\s,:]*)+/, '');
  const command = await threadCommand(said, existing, thread, actor, deps.context.sessions);
  const inbound: Inbound = command
    ? command
    : existing?.status === 'waiting' && existing.pendingQuestion
      ? { kind: 'answer', thread, actor, questionId: existing.pendingQuestion.questionId, text: request.text }
      : {
          kind: 'start',
          thread,
          actor,
          text: request.text,
          repo: repoUrl(deps.gitUrl, request),
          ...(pull && { baseBranch: pull.base.ref, branch: pull.head.ref }),
        };
  const taken = await takeImages(deps, request, inbound, work);
  const errand: ProgressErrand = {
    kind: 'progress',
    requestId,
    installationId: request.installationId,
    place,
    who,
    ...(request.react && { react: request.react }),
  };
  return { kind: 'inbound', inbound: taken, errand };
}

/** The attempt of the delivery being worked and its abort signal. */
type DeliveryWork = { attempt: number; signal: AbortSignal };

/**
 * The request's command with the images its body shows; the refused ones get a comment on the
 * first attempt only (a retry would say it again).
 */
async function takeImages(deps: InterpreterDeps, request: WorkRequest, inbound: Inbound, work: DeliveryWork) {
  if (!deps.images) return inbound;
  const images = { ...deps.images, token: () => deps.client.repoToken(request.installationId, request) };
  const taken = await withGitHubImages(images, `${request.owner}/${request.repo}`, request, inbound, work.signal);
  if (taken.note && work.attempt === 1) {
    const octokit = await deps.client.forInstallation(request.installationId);
    await postComment(octokit, placeOf(request), `@${request.sender.login} ${taken.note}`);
  }
  return taken.inbound;
}

/** Says on the thread what `@bot stop` did. */
async function replyToStop(deps: InterpreterDeps, errand: StopErrand, outcome: InboundOutcome): Promise<void> {
  const { who } = errand;
  const said =
    outcome.kind === 'stopped'
      ? `${who} Stopped. Mention me again to pick it up.`
      : outcome.kind === 'not-running'
        ? `${who} Nothing is running here (the session is ${outcome.session.status}).`
        : outcome.kind === 'no-session'
          ? `${who} I have no work here to stop.`
          : undefined;
  deps.log.info({ outcome: outcome.kind, pull: errand.place.number }, 'stop request');
  if (said) await postComment(await deps.client.forInstallation(errand.installationId), errand.place, said);
}

/**
 * Binds a taken request to its session, then (not awaited: the next delivery, another person's
 * request, need not queue behind these throttled writes) puts 👀 on it and posts its progress
 * comment through `comments`, where the replier awaits it. A request not taken is finished.
 */
async function replyToRequest(deps: InterpreterDeps, errand: ProgressErrand, outcome: InboundOutcome): Promise<void> {
  const { store } = deps;
  if (outcome.kind !== 'started' && outcome.kind !== 'appended') {
    await store.updateRequest(errand.requestId, { finished: true });
    // A decision the session service would not take (an address no thread may allow): say why.
    if (outcome.kind === 'refused')
      await postComment(
        await deps.client.forInstallation(errand.installationId),
        errand.place,
        `${errand.who} ${outcome.message}`,
      );
    deps.log.info({ outcome: outcome.kind, pull: errand.place.number }, 'GitHub request not taken');
    return;
  }
  const bound = store.updateRequest(errand.requestId, { sessionId: outcome.session.id });
  // Registered before the first await, so a replier called for the session's first events waits for it.
  // A failed binding fails the delivery (awaited below), which retries it; nothing is posted then.
  void deps.comments.post(errand.requestId, () =>
    bound.then(
      () => postProgress(deps, errand),
      () => undefined,
    ),
  );
  await bound;
}

/**
 * 👀 and "On it" for a taken request, posted once (postProgressOnce). A refused post leaves it
 * without a progress comment, finished; any other failure leaves it to the replier, which posts
 * it (or finds the one in doubt) when the request's events are shown.
 */
async function postProgress(deps: InterpreterDeps, errand: ProgressErrand): Promise<number | undefined> {
  const log = deps.log.child({ pull: errand.place.number });
  try {
    const octokit = await deps.client.forInstallation(errand.installationId);
    if (errand.react)
      await addEyes(octokit, { owner: errand.place.owner, repo: errand.place.repo }, errand.react).catch(
        (error: unknown) => log.warn({ err: error }, 'could not add the reaction'),
      );
    const botLogin = (await deps.client.identity()).login;
    return await postProgressOnce({ octokit, botLogin, store: deps.store, log }, progressTarget(errand));
  } catch (error) {
    log.error({ err: error }, 'could not post the progress comment');
    return undefined;
  }
}

/** The fields of a request's row its progress comment is posted from, as the errand has them. */
function progressTarget(errand: ProgressErrand): ProgressTarget {
  const { place } = errand;
  return {
    id: errand.requestId,
    owner: place.owner,
    repo: place.repo,
    number: place.number,
    commentKind: place.in,
    replyTo: place.in === 'review' ? place.id : null,
    lastBody: `👀 On it, ${errand.who}.`,
  };
}

/** The delivery failed for good: a request for work hears why on its thread. */
async function tellFailure(
  deps: InterpreterDeps,
  delivery: StoredDelivery,
  reason: string,
  signal: AbortSignal,
): Promise<void> {
  const payload = parsePayload(delivery);
  if (!payload) return;
  const classified = classifyWebhook(delivery.kind, payload, await deps.client.identity(), deps.triggerLabel);
  if (classified.kind !== 'work') return;
  const request = classified.request;
  const what = request.react?.on === 'issue' ? 'request' : 'comment';
  const octokit = await deps.client.forInstallation(request.installationId);
  await postComment(
    octokit,
    placeOf(request),
    `@${request.sender.login} I could not process this ${what}: ${reason}`,
    signal,
  );
}
