import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Actor } from '../../src/core/actor.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import type { InboundSurface, Normalized, StoredDelivery } from '../../src/core/inbound-surface.ts';
import { threadKey, type ThreadRef } from '../../src/core/thread-ref.ts';
import type { IntegrationContext } from '../integration-module.ts';
import {
  classifyWebhook,
  failedConclusions,
  PullRequest,
  type CiReport,
  type PullClosed,
  type PullPushed,
  type WorkRequest,
} from './classify-webhook.ts';
import { collectCiFailure, decideCiFollowUp, followUpMessage } from './ci-follow-up.ts';
import { sessionMarker } from './render-pull-request.ts';
import { convertToDraft, verifyStatusContext } from './github-publish.ts';
import type { GitHubClient, PatchbayOctokit } from './github-client.ts';
import { addEyes, postComment, type CommentPlace } from './github-comments.ts';
import { repoUrl } from '../../src/core/repo-ref.ts';
import type { GitHubStore } from './github-store.ts';

const writeRoles = new Set(['admin', 'maintain', 'write']);

const InstallationEvent = z.object({
  action: z.string(),
  installation: z
    .object({
      id: z.number(),
      account: z.object({ login: z.string(), type: z.string().optional() }).passthrough().nullable(),
      repository_selection: z.string(),
    })
    .passthrough(),
  repositories: z.array(z.object({ id: z.number(), full_name: z.string() }).passthrough()).optional(),
  repositories_added: z.array(z.object({ id: z.number(), full_name: z.string() }).passthrough()).optional(),
  repositories_removed: z.array(z.object({ id: z.number(), full_name: z.string() }).passthrough()).optional(),
});

/**
 * What a GitHub webhook means, from its signed body alone: the comment and its action, the review,
 * the issue and its label change; anything else by the body's hash. A redelivery, or the same body
 * replayed under a new X-GitHub-Delivery or X-GitHub-Event, has the same key.
 */
export function githubDedupeKey(body: string, payload: Record<string, unknown>): string {
  const action = typeof payload.action === 'string' ? payload.action : '';
  const comment = payload.comment as { id?: unknown; updated_at?: unknown } | undefined;
  const review = payload.review as { id?: unknown; submitted_at?: unknown } | undefined;
  const issue = payload.issue as { id?: unknown; updated_at?: unknown } | undefined;
  const label = payload.label as { name?: unknown } | undefined;
  if (comment && typeof comment.id === 'number')
    return `${issue ? 'issue-comment' : 'review-comment'}:${comment.id}:${action}:${String(comment.updated_at ?? '')}`;
  if (review && typeof review.id === 'number')
    return `review:${review.id}:${action}:${String(review.submitted_at ?? '')}`;
  if (issue && typeof issue.id === 'number')
    return `issue:${issue.id}:${action}:${String(label?.name ?? '')}:${String(issue.updated_at ?? '')}`;
  return `body:${createHash('sha256').update(body).digest('hex')}`;
}

/**
 * Which deliveries must be worked in the order they came: one installation's events (an
 * installation and the repositories removed from it right after), one issue's or pull request's
 * comments and reviews (a request, then `stop`). Others have none.
 */
export function githubOrderKey(event: string, payload: Record<string, unknown>): string | undefined {
  const installation = payload.installation as { id?: unknown } | undefined;
  if ((event === 'installation' || event === 'installation_repositories') && typeof installation?.id === 'number')
    return `installation:${installation.id}`;
  const repository = payload.repository as { full_name?: unknown } | undefined;
  // CI events name the pull requests of their head commit; the first orders them with that PR's comments.
  const ci = (payload.check_run ?? payload.check_suite ?? payload.workflow_run) as
    | { pull_requests?: { number?: unknown }[] }
    | undefined;
  const number =
    (payload.issue as { number?: unknown } | undefined)?.number ??
    (payload.pull_request as { number?: unknown } | undefined)?.number ??
    ci?.pull_requests?.[0]?.number;
  if (typeof repository?.full_name === 'string' && typeof number === 'number')
    return `thread:${repository.full_name.toLowerCase()}#${number}`;
  return undefined;
}

function clipText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export type GitHubSurface = InboundSurface & { stop(): Promise<void> };

/**
 * GitHub's inbound half, as the pipeline drives it after the ack: installation bookkeeping, and
 * requests for work (permission check, the request's progress comment, 👀, hand-off to the
 * session service). Every step is safe to repeat on a retry.
 */
export function createGitHubSurface(deps: {
  client: GitHubClient;
  store: GitHubStore;
  context: Pick<IntegrationContext, 'findSession' | 'publicUrl' | 'addLesson' | 'sessionEvents'>;
  gitUrl: string;
  triggerLabel: string;
  log: Logger;
}): GitHubSurface {
  const { client, store, context, log } = deps;
  const acks = new Set<Promise<void>>();

  function parse(delivery: StoredDelivery): Record<string, unknown> | undefined {
    try {
      const payload: unknown = JSON.parse(delivery.body);
      return typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  async function normalize(delivery: StoredDelivery, signal: AbortSignal): Promise<Normalized> {
    const dlog = log.child({ deliveryId: delivery.deliveryId, event: delivery.kind });
    const payload = parse(delivery);
    if (!payload) return { kind: 'ignore', reason: 'the body is not a JSON object' };
    const bot = await client.identity();
    const classified = classifyWebhook(delivery.kind, payload, bot, deps.triggerLabel);
    switch (classified.kind) {
      case 'ignore':
        return { kind: 'ignore', reason: classified.reason };
      case 'broken':
        dlog.warn({ reason: classified.reason }, 'webhook payload not understood; dropped');
        return { kind: 'ignore', reason: `payload not understood: ${classified.reason}` };
      case 'installation':
        await recordInstallation(delivery.kind, payload, dlog);
        return { kind: 'ignore', reason: 'installation bookkeeping recorded' };
      case 'work':
        return takeRequest(classified.request, dlog);
      case 'autofix':
        return setAutofix(classified.request, classified.enabled, dlog);
      case 'ci':
        return classified.report.conclusion === 'success'
          ? noteFlaky(classified.report, dlog)
          : takeCiReport(classified.report, delivery, signal, dlog);
      case 'pull-closed':
        return notePullClosed(classified.closed, signal, dlog);
      case 'pull-pushed':
        return notePullPushed(classified.pushed, signal, dlog);
      default: {
        const _never: never = classified;
        return _never;
      }
    }
  }

  /** Where a request's replies go. */
  function placeOf(request: WorkRequest): CommentPlace {
    const where = { owner: request.owner, repo: request.repo };
    return request.reply.in === 'review'
      ? { ...where, number: request.number, in: 'review', id: request.reply.id }
      : { ...where, number: request.number, in: 'issue' };
  }

  async function recordInstallation(event: string, payload: unknown, dlog: Logger): Promise<void> {
    const parsed = InstallationEvent.safeParse(payload);
    if (!parsed.success) {
      // Retrying cannot fix the shape; one warning, and the delivery is done.
      dlog.warn({ issues: parsed.error.issues.slice(0, 5) }, 'installation payload not understood; dropped');
      return;
    }
    const p = parsed.data;
    const inst = p.installation;
    const upsert = (suspended: boolean) =>
      store.upsertInstallation({
        id: inst.id,
        accountLogin: inst.account?.login ?? 'unknown',
        accountType: inst.account?.type ?? 'User',
        repositorySelection: inst.repository_selection,
        suspended,
      });
    const repos = (list: { id: number; full_name: string }[] | undefined) =>
      (list ?? []).map((r) => ({ id: r.id, fullName: r.full_name }));
    if (event === 'installation') {
      if (p.action === 'deleted') return store.deleteInstallation(inst.id);
      await upsert(p.action === 'suspend');
      await store.addRepos(inst.id, repos(p.repositories));
      return;
    }
    await upsert(false);
    if (p.action === 'added') await store.addRepos(inst.id, repos(p.repositories_added));
    if (p.action === 'removed')
      await store.removeRepos(
        inst.id,
        repos(p.repositories_removed).map((r) => r.id),
      );
  }

  async function takeRequest(request: WorkRequest, dlog: Logger): Promise<Normalized> {
    const octokit = await client.forInstallation(request.installationId);
    const where = { owner: request.owner, repo: request.repo };
    const place = placeOf(request);
    const who = `@${request.sender.login}`;

    if (!(await canWrite(octokit, request))) {
      dlog.info({ user: request.sender.login }, 'request from a user without write access refused');
      await postComment(
        octokit,
        place,
        `${who} Sorry, only people with write access to ${request.owner}/${request.repo} can ask me to make changes here.`,
      );
      return { kind: 'ignore', reason: `${request.sender.login} has no write access` };
    }
    const actor: Actor = {
      source: 'github',
      id: String(request.sender.id),
      name: request.sender.login,
      githubLogin: request.sender.login,
      email: `${request.sender.id}+${request.sender.login}@users.noreply.github.com`,
    };
    if (request.stop) {
      const thread: ThreadRef = {
        source: 'github',
        owner: request.owner,
        repo: request.repo,
        number: request.number,
        kind: request.kind,
      };
      return {
        kind: 'inbound',
        inbound: { kind: 'stop', thread, actor },
        async after(outcome) {
          const said =
            outcome.kind === 'stopped'
              ? `${who} Stopped. Mention me again to pick it up.`
              : outcome.kind === 'not-running'
                ? `${who} Nothing is running here (the session is ${outcome.session.status}).`
                : outcome.kind === 'no-session'
                  ? `${who} I have no work here to stop.`
                  : undefined;
          dlog.info({ outcome: outcome.kind }, 'stop request');
          if (said) await postComment(octokit, place, said);
        },
      };
    }
    let pull: PullRequest | undefined;
    if (request.kind === 'pull') {
      pull =
        request.pull ??
        PullRequest.parse(
          (
            await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
              ...where,
              pull_number: request.number,
            })
          ).data,
        );
      const base = `${request.owner}/${request.repo}`.toLowerCase();
      if (!pull.head.repo || pull.head.repo.full_name.toLowerCase() !== base) {
        await postComment(
          octokit,
          place,
          `${who} I can't work on this pull request: its branch lives in a fork (${pull.head.repo?.full_name ?? 'a deleted repository'}), and I only push to branches of ${request.owner}/${request.repo}. Push the branch here, or open an issue and mention me there.`,
        );
        return { kind: 'ignore', reason: 'the pull request comes from a fork' };
      }
    }

    const thread: ThreadRef = {
      source: 'github',
      owner: request.owner,
      repo: request.repo,
      number: request.number,
      kind: request.kind,
    };
    const key = threadKey(thread)!;
    const existing = await context.findSession(thread);
    // The request is recorded, then handed to the session service, and only then acknowledged on
    // GitHub: comment writes are throttled (GitHub asks for a second between them), and the run
    // should not wait for them. Replies wait for the progress comment (see the replier).
    const requestId = await store.createRequest({
      threadKey: key,
      owner: request.owner,
      repo: request.repo,
      number: request.number,
      commentKind: place.in,
      commentId: null,
      startSeq: existing?.lastSeq ?? 0,
      lastBody: `👀 On it, ${who}.`,
    });

    const inbound: Inbound =
      existing?.status === 'waiting' && existing.pendingQuestion
        ? { kind: 'answer', thread, actor, questionId: existing.pendingQuestion.questionId, text: request.text }
        : {
            kind: 'start',
            thread,
            actor,
            text: request.text,
            repo: repoUrl(deps.gitUrl, request),
            ...(pull && { baseBranch: pull.base.ref, branch: pull.head.ref }),
          };
    return {
      kind: 'inbound',
      inbound,
      async after(outcome) {
        if (outcome.kind !== 'started' && outcome.kind !== 'appended') {
          await store.updateRequest(requestId, { finished: true });
          dlog.info({ outcome: outcome.kind }, 'GitHub request not taken');
          return;
        }
        await store.updateRequest(requestId, { sessionId: outcome.session.id });
        // Not awaited: the next delivery (another person's request) need not queue behind these
        // throttled writes. A failure leaves the request without a progress comment, marked done.
        const ack = (async () => {
          if (request.react)
            await addEyes(octokit, where, request.react).catch((error: unknown) =>
              dlog.warn({ err: error }, 'could not add the reaction'),
            );
          const progress = await postComment(octokit, place, `👀 On it, ${who}.`);
          await store.updateRequest(requestId, { commentId: progress.id });
        })().catch(async (error: unknown) => {
          dlog.error({ err: error }, 'could not post the progress comment');
          await store.updateRequest(requestId, { finished: true }).catch(() => undefined);
        });
        acks.add(ack);
        void ack.finally(() => acks.delete(ack));
      },
    };
  }

  /** `@bot autofix off|on` on a pull request: whether CI failures start follow-up runs there. */
  async function setAutofix(request: WorkRequest, enabled: boolean, dlog: Logger): Promise<Normalized> {
    const octokit = await client.forInstallation(request.installationId);
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
    await store.setAutofix(request.owner, request.repo, request.number, enabled, request.sender.login);
    const bot = await client.identity();
    dlog.info({ pull: request.number, enabled }, 'CI autofix switched');
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
   * A finished check suite, check run or workflow run. A failure on the head commit of a pull
   * request a session opened becomes a `ci-failed` inbound: a follow-up run with the failing jobs'
   * log excerpts, or the reason there is none (said on the PR here and in the session's other
   * threads by their repliers).
   */
  async function takeCiReport(
    report: CiReport,
    delivery: StoredDelivery,
    signal: AbortSignal,
    dlog: Logger,
  ): Promise<Normalized> {
    if (!failedConclusions.has(report.conclusion))
      return { kind: 'ignore', reason: `${report.event} ${report.conclusion}` };
    for (const number of report.pullNumbers) {
      const thread: ThreadRef = { source: 'github', owner: report.owner, repo: report.repo, number, kind: 'pull' };
      const session = await context.findSession(thread);
      if (!session) continue;
      const octokit = await client.forInstallation(report.installationId);
      const where = { owner: report.owner, repo: report.repo };
      const pull = (
        await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', {
          ...where,
          pull_number: number,
          request: { signal },
        })
      ).data;
      if (!(pull.body ?? '').includes(sessionMarker(session.id)))
        return { kind: 'ignore', reason: `#${number} is not a pull request the session opened` };
      if (pull.state !== 'open') return { kind: 'ignore', reason: `#${number} is ${pull.state}` };
      if (pull.head.sha !== report.headSha)
        return { kind: 'ignore', reason: `${report.headSha.slice(0, 12)} is no longer the head of #${number}` };
      if (!(await store.autofix(report.owner, report.repo, number)))
        return { kind: 'ignore', reason: `automatic CI fixes are off for #${number}` };
      const claimed = await store.claimCiFailure({
        ...where,
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
      const earlier = await store.ciFailures(report.owner, report.repo, number, report.headSha);
      const pushed = await context.sessionEvents(session.id, ['branch-pushed']);
      const headIsOurs = pushed.some((e) => e.event.type === 'branch-pushed' && e.event.commit === report.headSha);
      const decision = decideCiFollowUp({
        headIsOurs,
        sessionStatus: session.status,
        earlier,
        signature: failure.signature,
      });
      const names = failure.jobs.map((j) => j.name);
      await store.decideCiFailure({
        ...where,
        number,
        headSha: report.headSha,
        followUp: decision.followUp,
        names,
        signature: failure.signature,
        ...(!decision.followUp && { reason: decision.reason }),
      });
      const attempt = earlier.filter((f) => f.followUp).length + 1;
      const name = names.join(', ') || report.name;
      const url = failure.jobs[0]?.url ?? report.url;
      dlog.info(
        {
          pull: number,
          commit: report.headSha,
          followUp: decision.followUp,
          reason: decision.followUp ? undefined : decision.reason,
        },
        'CI failure on a session pull request',
      );
      const startSeq = session.lastSeq;
      return {
        kind: 'inbound',
        inbound: {
          kind: 'ci-failed',
          thread,
          failure: {
            commit: report.headSha,
            pullNumber: number,
            name,
            ...(url && { url }),
            logExcerpt: failure.jobs.map((j) => `${j.name}:\n${j.excerpt}`).join('\n\n'),
            followUp: decision.followUp,
            ...(!decision.followUp && { reason: decision.reason }),
          },
          text: followUpMessage({ number, commit: report.headSha, failure, attempt }),
        },
        async after(outcome) {
          if (outcome.kind !== 'appended') return;
          const place = { ...where, number, in: 'issue' as const };
          const what = `CI failed on \`${report.headSha.slice(0, 12)}\` (${name}).`;
          if (!decision.followUp) {
            await postComment(
              octokit,
              place,
              `${what} I am not fixing it automatically: ${decision.reason}. [Session](${context.publicUrl}/sessions/${session.id})`,
            );
            return;
          }
          const body = `🔧 ${what} Working on a fix (automatic follow-up ${attempt} of 2).`;
          const requestId = await store.createRequest({
            threadKey: threadKey(thread)!,
            ...where,
            number,
            commentKind: 'issue',
            commentId: null,
            startSeq,
            lastBody: body,
          });
          await store.updateRequest(requestId, { sessionId: session.id });
          const progress = await postComment(octokit, place, body);
          await store.updateRequest(requestId, { commentId: progress.id });
        },
      };
    }
    return { kind: 'ignore', reason: 'not on a pull request a Patchbay session opened' };
  }

  /**
   * A check that failed on a session's pull request passed on the same commit (a re-run, nothing
   * changed): a lesson that it is flaky, for later runs on the repository.
   */
  async function noteFlaky(report: CiReport, dlog: Logger): Promise<Normalized> {
    for (const number of report.pullNumbers) {
      const session = await context.findSession({
        source: 'github',
        owner: report.owner,
        repo: report.repo,
        number,
        kind: 'pull',
      });
      if (!session) continue;
      const failed = await store.ciFailureAt(report.owner, report.repo, number, report.headSha);
      if (!failed) continue;
      const names = report.event === 'check_run' ? failed.names.filter((n) => n === report.name) : failed.names;
      if (names.length === 0) continue;
      const text = `${names.map((n) => `\`${n}\``).join(', ')} in GitHub CI failed and then passed on the same commit with nothing changed, so it is likely flaky: check a re-run before changing code for its failures.`;
      await context.addLesson(session.repo, text);
      dlog.info({ pull: number, commit: report.headSha, names }, 'flaky CI check recorded as a lesson');
      return { kind: 'ignore', reason: `flaky check recorded: ${names.join(', ')}` };
    }
    return { kind: 'ignore', reason: `${report.event} success` };
  }

  /**
   * A person pushed to a pull request a session opened: Patchbay did not check that commit, so it
   * gets a failing `patchbay/verify` saying so, and the PR goes back to draft (ready meant verified).
   */
  async function notePullPushed(pushed: PullPushed, signal: AbortSignal, dlog: Logger): Promise<Normalized> {
    const session = await context.findSession({
      source: 'github',
      owner: pushed.owner,
      repo: pushed.repo,
      number: pushed.number,
      kind: 'pull',
    });
    if (!session || !pushed.body.includes(sessionMarker(session.id)))
      return { kind: 'ignore', reason: 'not a pull request a Patchbay session opened' };
    const octokit = await client.forInstallation(pushed.installationId);
    const request = { signal };
    await octokit.request('POST /repos/{owner}/{repo}/statuses/{sha}', {
      owner: pushed.owner,
      repo: pushed.repo,
      sha: pushed.headSha,
      state: 'failure',
      context: verifyStatusContext,
      target_url: `${context.publicUrl}/sessions/${session.id}`,
      description: `Not verified: pushed by @${pushed.sender.login}; Patchbay did not check this commit`.slice(0, 140),
      request,
    });
    if (!pushed.draft && pushed.nodeId) await octokit.graphql(convertToDraft, { id: pushed.nodeId, request });
    dlog.info(
      { pull: pushed.number, sha: pushed.headSha, by: pushed.sender.login },
      'a person pushed to the pull request; marked not verified',
    );
    return { kind: 'ignore', reason: 'push to the pull request marked not verified' };
  }

  /** A pull request a session opened was closed unmerged: a lesson with the closer's reason. */
  async function notePullClosed(closed: PullClosed, signal: AbortSignal, dlog: Logger): Promise<Normalized> {
    const session = await context.findSession({
      source: 'github',
      owner: closed.owner,
      repo: closed.repo,
      number: closed.number,
      kind: 'pull',
    });
    if (!session || !closed.body.includes(sessionMarker(session.id)))
      return { kind: 'ignore', reason: 'not a pull request a Patchbay session opened' };
    const octokit = await client.forInstallation(closed.installationId);
    const { data: comments } = await octokit.request('GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
      owner: closed.owner,
      repo: closed.repo,
      issue_number: closed.number,
      per_page: 100,
      request: { signal },
    });
    // Only the closer's words: they had the right to close it, and their reason is the lesson.
    const said = comments
      .filter((c) => c.user?.login === closed.sender.login)
      .at(-1)
      ?.body?.trim();
    const reason = said ? `, who said: "${clipText(said.replace(/\s+/g, ' '), 400)}"` : ', with no reason given';
    const text = `A pull request Patchbay opened ("${clipText(closed.title, 120)}") was closed without merging by @${closed.sender.login}${reason}`;
    await context.addLesson(session.repo, text);
    dlog.info({ pull: closed.number, by: closed.sender.login }, 'pull request closed unmerged; lesson recorded');
    return { kind: 'ignore', reason: 'pull request closed unmerged; lesson recorded' };
  }

  async function canWrite(octokit: PatchbayOctokit, request: WorkRequest): Promise<boolean> {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
      owner: request.owner,
      repo: request.repo,
      username: request.sender.login,
    });
    return writeRoles.has(data.role_name) || writeRoles.has(data.permission);
  }

  return {
    source: 'github',
    interpret: normalize,
    async tellFailure(delivery, reason, signal) {
      const payload = parse(delivery);
      if (!payload) return;
      const classified = classifyWebhook(delivery.kind, payload, await client.identity(), deps.triggerLabel);
      if (classified.kind !== 'work') return;
      const request = classified.request;
      const what = request.react?.on === 'issue' ? 'request' : 'comment';
      const octokit = await client.forInstallation(request.installationId);
      await postComment(
        octokit,
        placeOf(request),
        `@${request.sender.login} I could not process this ${what}: ${reason}`,
        signal,
      );
    },
    async stop() {
      await Promise.allSettled([...acks]);
    },
  };
}
