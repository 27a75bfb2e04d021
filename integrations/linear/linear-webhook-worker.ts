import type { Logger } from 'pino';
import type { Actor } from '../../src/core/actor.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { Activity, LinearApi } from './linear-api.ts';
import { findRepos, fullName, parseRepoSetting, parseRepoUrl, type RepoName } from './linear-repo.ts';
import type { LinearAgentSession, LinearStore, PendingDelivery, PendingTask } from './linear-store.ts';
import { taskFromEvent } from './linear-task.ts';
import { AgentSessionEvent } from './linear-webhook.ts';
import { stableUuid } from './stable-uuid.ts';

export type LinearWorker = { kick(): void; start(): void; stop(): Promise<void>; drain(): Promise<number> };

/** What the Linear integration knows of repositories: the git host and the GitHub App's installed repos. */
export type RepoSource = {
  gitUrl: string;
  /** The session's repo string for a repository (`<gitUrl>/owner/repo`). */
  repoUrl(repo: RepoName): string;
  /** `owner/repo` of every repository the GitHub App is installed on (candidates to offer). */
  installed(): Promise<string[]>;
};

const emailLike = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const toActor = (user: { id: string; name: string; email?: string | undefined } | null | undefined): Actor =>
  user
    ? { source: 'linear', id: user.id, name: user.name, ...(user.email && emailLike.test(user.email) && { email: user.email }) }
    : { source: 'linear', id: 'unknown', name: 'A Linear user' };

const suggestionThreshold = 0.7;
/** Tries of one delivery before it is given up (and the agent session told why). */
const maxAttempts = 5;

/**
 * Works Linear deliveries after they were acknowledged. `created`: a first thought at once, then
 * the task built from the issue, a repository (named in the issue or comment, the team's setting,
 * Linear's suggestion, or asked for with a select elicitation), the session started, its page
 * linked from Linear and a delegated issue moved to the team's first started state. `prompted`:
 * the person's message steers the session, answers its question (or the repository question), or
 * with the stop signal stops the run.
 */
export function createLinearWorker(deps: {
  store: LinearStore;
  api: (organizationId: string) => Promise<LinearApi>;
  context: IntegrationContext;
  repos: RepoSource;
  teamRepos: Record<string, string>;
  log: Logger;
  sweepMs?: number;
}): LinearWorker {
  const { store, context, log } = deps;
  let running: Promise<number> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  const sessionUrl = (id: string) => `${context.publicUrl}/sessions/${id}`;

  async function work(delivery: PendingDelivery): Promise<void> {
    const dlog = log.child({ dedupeKey: delivery.dedupeKey, deliveryId: delivery.deliveryId });
    if (delivery.event !== 'AgentSessionEvent') {
      dlog.debug({ event: delivery.event }, 'Linear webhook ignored');
      return;
    }
    const parsed = AgentSessionEvent.safeParse(delivery.payload);
    if (!parsed.success) {
      // Retrying cannot fix the shape; one warning, and the delivery is done.
      dlog.warn({ issues: parsed.error.issues.slice(0, 5) }, 'Linear AgentSessionEvent not understood; acknowledged and dropped');
      return;
    }
    const event = parsed.data;
    const api = await deps.api(event.organizationId);
    if (event.action === 'created') await created(event, api, delivery.dedupeKey, dlog);
    else await prompted(event, api, delivery.dedupeKey, dlog);
  }

  const post = (api: LinearApi, agentSessionId: string, seed: string, activity: Activity) => api.postActivity(agentSessionId, { ...activity, id: stableUuid(`${agentSessionId}:${seed}`) });

  async function created(event: AgentSessionEvent, api: LinearApi, key: string, dlog: Logger): Promise<void> {
    const agentSessionId = event.agentSession.id;
    const issue = event.agentSession.issue;
    const issueId = issue?.id ?? event.agentSession.issueId;
    if (!issueId) {
      await post(api, agentSessionId, `${key}:no-issue`, { content: { type: 'error', body: 'I can only work from an issue: mention me on an issue or delegate one to me.' } });
      return;
    }
    // The acknowledgement comes first: Linear shows a session without an activity in 10 s as unresponsive.
    await post(api, agentSessionId, `${key}:ack`, { content: { type: 'thought', body: `Looking at ${issue?.identifier ?? 'the issue'}${issue ? ` "${issue.title}"` : ''}.` } });
    const row = await store.saveAgentSession({ agentSessionId, organizationId: event.organizationId, issueId, issueIdentifier: issue?.identifier ?? issueId });
    const thread: ThreadRef = { source: 'linear', agentSessionId, issueId };
    const actor = toActor(event.agentSession.creator);
    const details = await api.issue(issueId).catch((error: unknown) => {
      dlog.warn({ err: error }, 'could not read the issue from Linear; going on with the webhook alone');
      return undefined;
    });
    const text = taskFromEvent(event, details?.authorName ?? undefined);

    // An issue linked to a pull request of an existing session joins that conversation.
    for (const url of details?.attachmentUrls ?? []) {
      const linked = await sessionOfPull(url);
      if (!linked) continue;
      await context.addThread(linked.id, thread);
      await context.handle({ kind: 'message', thread, actor, text, deliveryId: key });
      await store.update(agentSessionId, { sessionId: linked.id });
      await api.updateSession(agentSessionId, { externalUrls: [{ label: 'Patchbay session', url: sessionUrl(linked.id) }] });
      dlog.info({ sessionId: linked.id }, 'Linear session joined the session of its linked pull request');
      return;
    }

    const installed = await deps.repos.installed().catch(() => [] as string[]);
    const resolved = await resolveRepo(event, api, installed, details?.teamKey ?? issue?.team.key, dlog);
    if (!resolved) {
      await ask(api, row, { text, actor, candidates: installed.map((r) => deps.repos.repoUrl(splitName(r))) }, `${key}:ask`);
      return;
    }
    await post(api, agentSessionId, `${key}:repo`, { content: { type: 'thought', body: `Working in ${fullName(resolved.repo)} (${resolved.why}).` } });
    await start(api, row, { thread, actor, text, repo: resolved.repo, key }, dlog);
    if (details && details.delegateId === event.appUserId) await moveToStarted(api, details, dlog);
  }

  async function start(api: LinearApi, row: LinearAgentSession, input: { thread: ThreadRef; actor: Actor; text: string; repo: RepoName; key: string }, dlog: Logger): Promise<void> {
    const outcome = await context.handle({ kind: 'start', thread: input.thread, actor: input.actor, text: input.text, repo: deps.repos.repoUrl(input.repo), deliveryId: input.key });
    const session = 'session' in outcome ? outcome.session : await context.findSession(input.thread);
    if (!session) throw new Error(`the session service did not take the Linear session (${outcome.kind})`);
    await store.update(row.agentSessionId, { sessionId: session.id, pending: null });
    await api.updateSession(row.agentSessionId, { externalUrls: [{ label: 'Patchbay session', url: sessionUrl(session.id) }] });
    dlog.info({ sessionId: session.id, outcome: outcome.kind }, 'Linear session handed to the session service');
  }

  async function ask(api: LinearApi, row: LinearAgentSession, pending: PendingTask, seed: string): Promise<void> {
    await store.update(row.agentSessionId, { pending });
    const options = pending.candidates.map((value) => ({ value }));
    const body = options.length
      ? 'Which repository should I work in?'
      : 'Which repository should I work in? Reply with its GitHub URL (https://github.com/owner/repo).';
    await post(api, row.agentSessionId, seed, { content: { type: 'elicitation', body }, ...(options.length && { options }) });
  }

  async function resolveRepo(event: AgentSessionEvent, api: LinearApi, installed: string[], teamKey: string | undefined, dlog: Logger): Promise<{ repo: RepoName; why: string } | undefined> {
    const session = event.agentSession;
    const fromComment = findRepos(session.comment?.body ?? '', deps.repos.gitUrl, installed)[0];
    if (fromComment) return { repo: fromComment, why: 'named in the comment' };
    const fromIssue = findRepos(`${session.issue?.title ?? ''}\n${session.issue?.description ?? ''}`, deps.repos.gitUrl, installed)[0];
    if (fromIssue) return { repo: fromIssue, why: 'named in the issue' };
    const setting = teamKey ? deps.teamRepos[teamKey.toUpperCase()] : undefined;
    const fromTeam = setting ? parseRepoSetting(setting, deps.repos.gitUrl) : undefined;
    if (fromTeam) return { repo: fromTeam, why: `the ${teamKey} team's repository in LINEAR_TEAM_REPOS` };
    const issueId = session.issue?.id ?? session.issueId;
    if (!issueId || installed.length === 0) return undefined;
    const hostname = new URL(deps.repos.gitUrl).host;
    const suggestions = await api.suggestRepositories(issueId, session.id, installed.map((repositoryFullName) => ({ hostname, repositoryFullName }))).catch((error: unknown) => {
      dlog.warn({ err: error }, 'Linear repository suggestions failed; asking instead');
      return [];
    });
    const best = suggestions.filter((s) => s.confidence >= suggestionThreshold).sort((a, b) => b.confidence - a.confidence)[0];
    if (best && installed.some((r) => r.toLowerCase() === best.repositoryFullName.toLowerCase())) {
      return { repo: splitName(best.repositoryFullName), why: `Linear suggested it with confidence ${best.confidence.toFixed(2)}` };
    }
    return undefined;
  }

  async function moveToStarted(api: LinearApi, issue: Awaited<ReturnType<LinearApi['issue']>>, dlog: Logger): Promise<void> {
    if (['started', 'completed', 'canceled'].includes(issue.stateType)) return;
    const first = issue.states.find((s) => s.type === 'started');
    if (!first) return;
    await api.moveIssue(issue.id, first.id).catch((error: unknown) => dlog.warn({ err: error }, 'could not move the issue to its started state'));
  }

  async function sessionOfPull(url: string) {
    const repo = parseRepoUrl(url, deps.repos.gitUrl);
    const number = /\/pull\/(\d+)/.exec(url)?.[1];
    if (!repo || !number) return undefined;
    return context.findSession({ source: 'github', owner: repo.owner, repo: repo.repo, number: Number(number), kind: 'pull' });
  }

  async function prompted(event: AgentSessionEvent, api: LinearApi, key: string, dlog: Logger): Promise<void> {
    const agentSessionId = event.agentSession.id;
    const activity = event.agentActivity;
    const body = activity?.content.body?.trim() ?? '';
    const actor = toActor(activity?.user);
    const issueId = event.agentSession.issue?.id ?? event.agentSession.issueId ?? '';
    const thread: ThreadRef = { source: 'linear', agentSessionId, issueId };
    const row = (await store.agentSession(agentSessionId)) ?? (issueId ? await store.saveAgentSession({ agentSessionId, organizationId: event.organizationId, issueId, issueIdentifier: event.agentSession.issue?.identifier ?? issueId }) : undefined);
    if (!row) {
      await post(api, agentSessionId, `${key}:no-issue`, { content: { type: 'error', body: 'I can only work from an issue: mention me on an issue or delegate one to me.' } });
      return;
    }

    if (activity?.signal === 'stop') {
      if (row.pending) {
        await store.update(agentSessionId, { pending: null });
        await post(api, agentSessionId, `${key}:stopped`, { content: { type: 'response', body: 'Stopped. I had not started any work yet.' } });
        return;
      }
      const outcome = await context.handle({ kind: 'stop', thread, actor, deliveryId: key });
      dlog.info({ outcome: outcome.kind }, 'Linear stop request');
      // A stopped run reports itself (the thread's final response); otherwise say why nothing stopped.
      if (outcome.kind === 'not-running' || outcome.kind === 'no-session') {
        const why = outcome.kind === 'not-running' ? `Nothing is running: the session is ${outcome.session.status}.` : 'Nothing is running here.';
        await post(api, agentSessionId, `${key}:stopped`, { content: { type: 'response', body: why } });
      }
      return;
    }
    if (!body) return;

    if (row.pending) {
      const choice = findRepos(body, deps.repos.gitUrl, row.pending.candidates.map((c) => fullName(parseRepoUrl(c, deps.repos.gitUrl) ?? splitName(c))))[0];
      if (!choice) {
        await ask(api, row, row.pending, `${key}:ask-again`);
        return;
      }
      await post(api, agentSessionId, `${key}:repo`, { content: { type: 'thought', body: `Working in ${fullName(choice)} (${actor.name}'s choice).` } });
      await start(api, row, { thread, actor: row.pending.actor, text: row.pending.text, repo: choice, key }, dlog);
      return;
    }

    const session = row.sessionId ? await context.getSession(row.sessionId) : await context.findSession(thread);
    if (!session) {
      await post(api, agentSessionId, `${key}:lost`, { content: { type: 'error', body: 'I have no work for this session any more. Mention me again on the issue to start over.' } });
      return;
    }
    const outcome =
      session.status === 'waiting' && session.pendingQuestion
        ? await context.handle({ kind: 'answer', thread, actor, questionId: session.pendingQuestion.questionId, text: body, deliveryId: key })
        : await context.handle({ kind: 'message', thread, actor, text: body, deliveryId: key });
    dlog.info({ sessionId: session.id, outcome: outcome.kind }, 'Linear prompt handed to the session');
    if (outcome.kind === 'appended') await post(api, agentSessionId, `${key}:ack`, { content: { type: 'thought', body: 'Got it.' }, ephemeral: true });
  }

  /** The last try failed: say so in the agent session, so it is not left waiting for an answer. */
  async function giveUp(delivery: PendingDelivery, error: unknown): Promise<void> {
    const parsed = AgentSessionEvent.safeParse(delivery.payload);
    if (!parsed.success) return;
    const event = parsed.data;
    try {
      const api = await deps.api(event.organizationId);
      await post(api, event.agentSession.id, `${delivery.dedupeKey}:gave-up`, { content: { type: 'error', body: `Patchbay could not take this request: ${(error as Error).message ?? String(error)}` } });
    } catch (reportError) {
      log.error({ err: reportError, dedupeKey: delivery.dedupeKey }, 'could not tell Linear that the request failed');
    }
  }

  async function drain(): Promise<number> {
    if (running) {
      again = true;
      return running;
    }
    running = store
      .workPending(async (delivery) => {
        try {
          await work(delivery);
        } catch (error) {
          const last = delivery.attempts + 1 >= maxAttempts;
          log.warn({ err: error, dedupeKey: delivery.dedupeKey, attempt: delivery.attempts + 1 }, last ? 'Linear delivery failed for the last time' : 'Linear delivery failed; will retry');
          if (last) await giveUp(delivery, error);
          throw error;
        }
      }, { maxAttempts })
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
      void drain().catch((error: unknown) => log.error({ err: error }, 'Linear webhook queue failed'));
    },
    drain,
    start() {
      timer = setInterval(() => void drain().catch((error: unknown) => log.warn({ err: error }, 'Linear webhook sweep failed')), deps.sweepMs ?? 15_000);
      timer.unref();
      void drain().catch(() => undefined);
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}

function splitName(name: string): RepoName {
  const [owner = '', repo = ''] = name.split('/');
  return { owner, repo };
}
