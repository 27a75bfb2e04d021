import type { Logger } from 'pino';
import { z } from 'zod';
import type { Actor } from '../../src/core/actor.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { threadKey, type ThreadRef } from '../../src/core/thread-ref.ts';
import type { IntegrationContext } from '../integration-module.ts';
import { classifyWebhook, PullRequest, type WorkRequest } from './classify-webhook.ts';
import type { GitHubClient, PatchbayOctokit } from './github-client.ts';
import { addEyes, postComment, type CommentPlace } from './github-comments.ts';
import { gitHubRepoUrl } from './github-repo-url.ts';
import type { GitHubStore, PendingDelivery } from './github-store.ts';

const writeRoles = new Set(['admin', 'maintain', 'write']);

const InstallationEvent = z.object({
  action: z.string(),
  installation: z.object({
    id: z.number(),
    account: z.object({ login: z.string(), type: z.string().optional() }).passthrough().nullable(),
    repository_selection: z.string(),
  }).passthrough(),
  repositories: z.array(z.object({ id: z.number(), full_name: z.string() }).passthrough()).optional(),
  repositories_added: z.array(z.object({ id: z.number(), full_name: z.string() }).passthrough()).optional(),
  repositories_removed: z.array(z.object({ id: z.number(), full_name: z.string() }).passthrough()).optional(),
});

export type WebhookWorker = { kick(): void; start(): void; stop(): Promise<void>; drain(): Promise<number> };

/**
 * Works queued webhook deliveries after they were acknowledged: installation bookkeeping, and
 * requests for work (permission check, 👀, progress comment, hand-off to the session service).
 */
export function createWebhookWorker(deps: {
  client: GitHubClient;
  store: GitHubStore;
  context: IntegrationContext;
  gitUrl: string;
  triggerLabel: string;
  log: Logger;
  sweepMs?: number;
}): WebhookWorker {
  const { client, store, context, log } = deps;
  let running: Promise<number> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  const acks = new Set<Promise<void>>();

  async function workDelivery(delivery: PendingDelivery): Promise<void> {
    const dlog = log.child({ deliveryId: delivery.deliveryId, event: delivery.event });
    const bot = await client.identity();
    const classified = classifyWebhook(delivery.event, delivery.payload, bot, deps.triggerLabel);
    switch (classified.kind) {
      case 'ignore':
        dlog.debug({ reason: classified.reason }, 'webhook ignored');
        return;
      case 'broken':
        dlog.warn({ reason: classified.reason }, 'webhook payload not understood; dropped');
        return;
      case 'installation':
        await recordInstallation(delivery.event, delivery.payload, dlog);
        return;
      case 'work':
        await takeRequest(classified.request, delivery.deliveryId, dlog);
        return;
      default: {
        const _never: never = classified;
        return _never;
      }
    }
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
    const repos = (list: { id: number; full_name: string }[] | undefined) => (list ?? []).map((r) => ({ id: r.id, fullName: r.full_name }));
    if (event === 'installation') {
      if (p.action === 'deleted') return store.deleteInstallation(inst.id);
      await upsert(p.action === 'suspend');
      await store.addRepos(inst.id, repos(p.repositories));
      return;
    }
    await upsert(false);
    if (p.action === 'added') await store.addRepos(inst.id, repos(p.repositories_added));
    if (p.action === 'removed') await store.removeRepos(inst.id, repos(p.repositories_removed).map((r) => r.id));
  }

  async function takeRequest(request: WorkRequest, deliveryId: string, dlog: Logger): Promise<void> {
    const octokit = await client.forInstallation(request.installationId);
    const where = { owner: request.owner, repo: request.repo };
    const place: CommentPlace = request.reply.in === 'review' ? { ...where, number: request.number, in: 'review', id: request.reply.id } : { ...where, number: request.number, in: 'issue' };
    const who = `@${request.sender.login}`;

    if (!(await canWrite(octokit, request))) {
      dlog.info({ user: request.sender.login }, 'request from a user without write access refused');
      await postComment(octokit, place, `${who} Sorry, only people with write access to ${request.owner}/${request.repo} can ask me to make changes here.`);
      return;
    }
    const actor: Actor = {
      source: 'github',
      id: String(request.sender.id),
      name: request.sender.login,
      githubLogin: request.sender.login,
      email: `${request.sender.id}+${request.sender.login}@users.noreply.github.com`,
    };
    if (request.stop) {
      const thread: ThreadRef = { source: 'github', owner: request.owner, repo: request.repo, number: request.number, kind: request.kind };
      const outcome = await context.handle({ kind: 'stop', thread, actor, deliveryId });
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
      return;
    }
    let pull: PullRequest | undefined;
    if (request.kind === 'pull') {
      pull = request.pull ?? PullRequest.parse((await octokit.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { ...where, pull_number: request.number })).data);
      const base = `${request.owner}/${request.repo}`.toLowerCase();
      if (!pull.head.repo || pull.head.repo.full_name.toLowerCase() !== base) {
        await postComment(
          octokit,
          place,
          `${who} I can't work on this pull request: its branch lives in a fork (${pull.head.repo?.full_name ?? 'a deleted repository'}), and I only push to branches of ${request.owner}/${request.repo}. Push the branch here, or open an issue and mention me there.`,
        );
        return;
      }
    }

    const thread: ThreadRef = { source: 'github', owner: request.owner, repo: request.repo, number: request.number, kind: request.kind };
    const key = threadKey(thread)!;
    const existing = await context.findSession(thread);
    // The request is recorded, then handed to the session service, and only then acknowledged on
    // GitHub: comment writes are throttled (GitHub asks for a second between them), and the run
    // should not wait for them. Deliveries wait for the progress comment (see the integration).
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
        ? { kind: 'answer', thread, actor, questionId: existing.pendingQuestion.questionId, text: request.text, deliveryId }
        : {
            kind: 'start',
            thread,
            actor,
            text: request.text,
            repo: gitHubRepoUrl(deps.gitUrl, request),
            ...(pull && { baseBranch: pull.base.ref, branch: pull.head.ref }),
            deliveryId,
          };
    const outcome = await context.handle(inbound);
    if (outcome.kind !== 'started' && outcome.kind !== 'appended') {
      await store.updateRequest(requestId, { finished: true });
      dlog.info({ outcome: outcome.kind }, 'GitHub request not taken');
      return;
    }
    await store.updateRequest(requestId, { sessionId: outcome.session.id });
    dlog.info({ sessionId: outcome.session.id, outcome: outcome.kind }, 'GitHub request handed to the session');
    // Not awaited: the next delivery (another person's request) need not queue behind these
    // throttled writes. A failure leaves the request without a progress comment, marked done.
    const ack = (async () => {
      if (request.react) await addEyes(octokit, where, request.react).catch((error: unknown) => dlog.warn({ err: error }, 'could not add the reaction'));
      const progress = await postComment(octokit, place, `👀 On it, ${who}.`);
      await store.updateRequest(requestId, { commentId: progress.id });
    })().catch(async (error: unknown) => {
      dlog.error({ err: error }, 'could not post the progress comment');
      await store.updateRequest(requestId, { finished: true }).catch(() => undefined);
    });
    acks.add(ack);
    void ack.finally(() => acks.delete(ack));
  }

  async function canWrite(octokit: PatchbayOctokit, request: WorkRequest): Promise<boolean> {
    const { data } = await octokit.request('GET /repos/{owner}/{repo}/collaborators/{username}/permission', {
      owner: request.owner,
      repo: request.repo,
      username: request.sender.login,
    });
    return writeRoles.has(data.role_name) || writeRoles.has(data.permission);
  }

  async function drain(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = store
      .workPending(async (delivery) => {
        try {
          await workDelivery(delivery);
        } catch (error) {
          log.warn({ err: error, deliveryId: delivery.deliveryId }, 'webhook delivery failed; will retry');
          throw error;
        }
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          void drain();
        }
      });
    return running;
  }

  return {
    kick() {
      void drain().catch((error: unknown) => log.error({ err: error }, 'webhook queue failed'));
    },
    drain,
    start() {
      timer = setInterval(() => void drain().catch((error: unknown) => log.warn({ err: error }, 'webhook sweep failed')), deps.sweepMs ?? 15_000);
      timer.unref();
      void drain().catch(() => undefined);
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
      await Promise.allSettled([...acks]);
    },
  };
}
