import type { Logger } from 'pino';
import type { Actor } from '../../src/core/actor.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import type { InboundSurface, Normalized, ReceivedDelivery, StoredDelivery } from '../../src/core/inbound-surface.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { IntegrationContext } from '../integration-module.ts';
import type { Activity, LinearApi } from './linear-api.ts';
import { findRepos, fullName, parseRepoLink, parseRepoSetting, type RepoName } from './linear-repo.ts';
import { parseRepoName } from '../../src/core/repo-ref.ts';
import type { LinearAgentSession, LinearStore, PendingTask } from './linear-store.ts';
import { mentionOf, taskFromEvent, threadContextOf } from './linear-task.ts';
import { AgentSessionEvent, dedupeKeyOf } from './linear-webhook.ts';
import { stableUuid } from './stable-uuid.ts';

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
    ? {
        source: 'linear',
        id: user.id,
        name: user.name,
        ...(user.email && emailLike.test(user.email) && { email: user.email }),
      }
    : { source: 'linear', id: 'unknown', name: 'A Linear user' };

const suggestionThreshold = 0.7;

/**
 * A verified Linear webhook as the inbound pipeline stores it, under the key of what it means (an
 * agent session is created once; a prompt is one agent activity); undefined when it has none.
 */
export function linearDelivery(
  payload: Record<string, unknown>,
  raw: string,
  deliveryId: string | undefined,
  eventHeader: string | undefined,
): ReceivedDelivery | undefined {
  const dedupeKey = dedupeKeyOf(payload, deliveryId);
  if (!dedupeKey) return undefined;
  const kind = typeof payload.type === 'string' ? payload.type : (eventHeader ?? 'unknown');
  // One agent session's events in the order they came: its creation before the prompts in it.
  const agentSessionId = (payload.agentSession as { id?: unknown } | undefined)?.id;
  const orderKey = typeof agentSessionId === 'string' ? `agent-session:${agentSessionId}` : undefined;
  return {
    source: 'linear',
    dedupeKey,
    kind,
    body: raw,
    ...(deliveryId && { deliveryId }),
    ...(orderKey && { orderKey }),
  };
}

const ignore = (reason: string): Normalized => ({ kind: 'ignore', reason });

/**
 * Linear's inbound half, as the pipeline drives it after the ack. `created`: a first thought at
 * once, then the task built from the issue, a repository (named in the issue or comment, the team's
 * setting, Linear's suggestion, or asked for with a select elicitation), the session started, its
 * page linked from Linear and a delegated issue moved to the team's first started state.
 * `prompted`: the person's message steers the session, answers its question (or the repository
 * question), or with the stop signal stops the run. Every activity carries an id derived from the
 * delivery, so a retry re-posts nothing.
 */
export function createLinearSurface(deps: {
  store: LinearStore;
  api: (organizationId: string) => Promise<LinearApi>;
  context: Pick<IntegrationContext, 'publicUrl' | 'addThread' | 'findSession' | 'getSession'>;
  repos: RepoSource;
  teamRepos: Record<string, string>;
  log: Logger;
}): InboundSurface {
  const { store, context, log } = deps;
  const sessionUrl = (id: string) => `${context.publicUrl}/sessions/${id}`;

  function parse(delivery: StoredDelivery): AgentSessionEvent | string {
    if (delivery.kind !== 'AgentSessionEvent') return `event ${delivery.kind} is not one Patchbay handles`;
    let payload: unknown;
    try {
      payload = JSON.parse(delivery.body);
    } catch {
      return 'the body is not JSON';
    }
    const parsed = AgentSessionEvent.safeParse(payload);
    // Retrying cannot fix the shape: ignored, with the first problems as the reason.
    if (!parsed.success)
      return `AgentSessionEvent not understood: ${parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.')}: ${i.message}`)
        .join('; ')}`;
    return parsed.data;
  }

  async function normalize(delivery: StoredDelivery): Promise<Normalized> {
    const event = parse(delivery);
    if (typeof event === 'string') return ignore(event);
    const dlog = log.child({ agentSessionId: event.agentSession.id, action: event.action });
    const api = await deps.api(event.organizationId);
    return event.action === 'created'
      ? created(event, api, delivery.dedupeKey, dlog)
      : prompted(event, api, delivery.dedupeKey, dlog);
  }

  const post = (api: LinearApi, agentSessionId: string, seed: string, activity: Activity) =>
    api.postActivity(agentSessionId, { ...activity, id: stableUuid(`${agentSessionId}:${seed}`) });

  async function created(event: AgentSessionEvent, api: LinearApi, key: string, dlog: Logger): Promise<Normalized> {
    const agentSessionId = event.agentSession.id;
    const issue = event.agentSession.issue;
    const issueId = issue?.id ?? event.agentSession.issueId;
    if (!issueId) {
      await post(api, agentSessionId, `${key}:no-issue`, {
        content: {
          type: 'error',
          body: 'I can only work from an issue: mention me on an issue or delegate one to me.',
        },
      });
      return ignore('the agent session has no issue');
    }
    // The acknowledgement comes first: Linear shows a session without an activity in 10 s as unresponsive.
    await post(api, agentSessionId, `${key}:ack`, {
      content: {
        type: 'thought',
        body: `Looking at ${issue?.identifier ?? 'the issue'}${issue ? ` "${issue.title}"` : ''}.`,
      },
    });
    const row = await store.saveAgentSession({
      agentSessionId,
      organizationId: event.organizationId,
      issueId,
      issueIdentifier: issue?.identifier ?? issueId,
    });
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
      return {
        kind: 'inbound',
        inbound: { kind: 'message', thread, actor, text, deliveryId: key },
        async after() {
          await store.update(agentSessionId, { sessionId: linked.id });
          await api.updateSession(agentSessionId, {
            externalUrls: [{ label: 'Patchbay session', url: sessionUrl(linked.id) }],
          });
          dlog.info({ sessionId: linked.id }, 'Linear session joined the session of its linked pull request');
        },
      };
    }

    const installed = await deps.repos.installed().catch(() => [] as string[]);
    const resolved = await resolveRepo(event, api, installed, details?.teamKey ?? issue?.team.key, dlog);
    if (!resolved) {
      await ask(
        api,
        row,
        { text, actor, candidates: installed.map((r) => deps.repos.repoUrl(splitName(r))) },
        `${key}:ask`,
      );
      return ignore('asked which repository to work in');
    }
    await post(api, agentSessionId, `${key}:repo`, {
      content: { type: 'thought', body: `Working in ${fullName(resolved.repo)} (${resolved.why}).` },
    });
    return start(api, row, { thread, actor, text, repo: resolved.repo, key }, dlog, async () => {
      if (details && details.delegateId === event.appUserId) await moveToStarted(api, details, dlog);
    });
  }

  /** Starts the session; once the service took it, binds the agent session to it and links its page. */
  function start(
    api: LinearApi,
    row: LinearAgentSession,
    input: { thread: ThreadRef; actor: Actor; text: string; repo: RepoName; key: string },
    dlog: Logger,
    then?: () => Promise<void>,
  ): Normalized {
    return {
      kind: 'inbound',
      inbound: {
        kind: 'start',
        thread: input.thread,
        actor: input.actor,
        text: input.text,
        repo: deps.repos.repoUrl(input.repo),
        deliveryId: input.key,
      },
      async after(outcome) {
        // A retry after a half-finished attempt finds the session the first one started.
        const session = 'session' in outcome ? outcome.session : await context.findSession(input.thread);
        if (!session) throw new Error(`the session service did not take the Linear session (${outcome.kind})`);
        await store.update(row.agentSessionId, { sessionId: session.id, pending: null });
        await api.updateSession(row.agentSessionId, {
          externalUrls: [{ label: 'Patchbay session', url: sessionUrl(session.id) }],
        });
        dlog.info({ sessionId: session.id, outcome: outcome.kind }, 'Linear session handed to the session service');
        await then?.();
      },
    };
  }

  async function ask(api: LinearApi, row: LinearAgentSession, pending: PendingTask, seed: string): Promise<void> {
    await store.update(row.agentSessionId, { pending });
    const options = pending.candidates.map((value) => ({ value }));
    const body = options.length
      ? 'Which repository should I work in?'
      : 'Which repository should I work in? Reply with its GitHub URL (https://github.com/owner/repo).';
    await post(api, row.agentSessionId, seed, {
      content: { type: 'elicitation', body },
      ...(options.length && { options }),
    });
  }

  async function resolveRepo(
    event: AgentSessionEvent,
    api: LinearApi,
    installed: string[],
    teamKey: string | undefined,
    dlog: Logger,
  ): Promise<{ repo: RepoName; why: string } | undefined> {
    const session = event.agentSession;
    // The mention first (the requester's own words), then the rest of its thread.
    const mention = mentionOf(event);
    const fromMention = mention && findRepos(mention.body, deps.repos.gitUrl, installed)[0];
    if (fromMention) return { repo: fromMention, why: 'named in the comment' };
    const fromThread = findRepos(
      threadContextOf(event, mention)
        .map((c) => c.body)
        .join('\n'),
      deps.repos.gitUrl,
      installed,
    )[0];
    if (fromThread) return { repo: fromThread, why: 'named in the comment thread' };
    const fromIssue = findRepos(
      `${session.issue?.title ?? ''}\n${session.issue?.description ?? ''}`,
      deps.repos.gitUrl,
      installed,
    )[0];
    if (fromIssue) return { repo: fromIssue, why: 'named in the issue' };
    const setting = teamKey ? deps.teamRepos[teamKey.toUpperCase()] : undefined;
    const fromTeam = setting ? parseRepoSetting(setting, deps.repos.gitUrl) : undefined;
    if (fromTeam) return { repo: fromTeam, why: `the ${teamKey} team's repository in LINEAR_TEAM_REPOS` };
    const issueId = session.issue?.id ?? session.issueId;
    if (!issueId || installed.length === 0) return undefined;
    const hostname = new URL(deps.repos.gitUrl).host;
    const suggestions = await api
      .suggestRepositories(
        issueId,
        session.id,
        installed.map((repositoryFullName) => ({ hostname, repositoryFullName })),
      )
      .catch((error: unknown) => {
        dlog.warn({ err: error }, 'Linear repository suggestions failed; asking instead');
        return [];
      });
    const best = suggestions
      .filter((s) => s.confidence >= suggestionThreshold)
      .sort((a, b) => b.confidence - a.confidence)[0];
    if (best && installed.some((r) => r.toLowerCase() === best.repositoryFullName.toLowerCase())) {
      return {
        repo: splitName(best.repositoryFullName),
        why: `Linear suggested it with confidence ${best.confidence.toFixed(2)}`,
      };
    }
    return undefined;
  }

  async function moveToStarted(
    api: LinearApi,
    issue: Awaited<ReturnType<LinearApi['issue']>>,
    dlog: Logger,
  ): Promise<void> {
    if (['started', 'completed', 'canceled'].includes(issue.stateType)) return;
    const first = issue.states.find((s) => s.type === 'started');
    if (!first) return;
    await api
      .moveIssue(issue.id, first.id)
      .catch((error: unknown) => dlog.warn({ err: error }, 'could not move the issue to its started state'));
  }

  async function sessionOfPull(url: string) {
    const repo = parseRepoLink(url, deps.repos.gitUrl);
    const number = /\/pull\/(\d+)/.exec(url)?.[1];
    if (!repo || !number) return undefined;
    return context.findSession({
      source: 'github',
      owner: repo.owner,
      repo: repo.repo,
      number: Number(number),
      kind: 'pull',
    });
  }

  async function prompted(event: AgentSessionEvent, api: LinearApi, key: string, dlog: Logger): Promise<Normalized> {
    const agentSessionId = event.agentSession.id;
    const activity = event.agentActivity;
    const body = activity?.content.body?.trim() ?? '';
    const actor = toActor(activity?.user);
    const issueId = event.agentSession.issue?.id ?? event.agentSession.issueId ?? '';
    const thread: ThreadRef = { source: 'linear', agentSessionId, issueId };
    const row =
      (await store.agentSession(agentSessionId)) ??
      (issueId
        ? await store.saveAgentSession({
            agentSessionId,
            organizationId: event.organizationId,
            issueId,
            issueIdentifier: event.agentSession.issue?.identifier ?? issueId,
          })
        : undefined);
    if (!row) {
      await post(api, agentSessionId, `${key}:no-issue`, {
        content: {
          type: 'error',
          body: 'I can only work from an issue: mention me on an issue or delegate one to me.',
        },
      });
      return ignore('the agent session has no issue');
    }

    if (activity?.signal === 'stop') {
      if (row.pending) {
        await store.update(agentSessionId, { pending: null });
        await post(api, agentSessionId, `${key}:stopped`, {
          content: { type: 'response', body: 'Stopped. I had not started any work yet.' },
        });
        return ignore('stopped before any work started');
      }
      return {
        kind: 'inbound',
        inbound: { kind: 'stop', thread, actor, deliveryId: key },
        async after(outcome) {
          dlog.info({ outcome: outcome.kind }, 'Linear stop request');
          // A stopped run reports itself (the thread's final response); otherwise say why nothing stopped.
          if (outcome.kind === 'not-running' || outcome.kind === 'no-session') {
            const why =
              outcome.kind === 'not-running'
                ? `Nothing is running: the session is ${outcome.session.status}.`
                : 'Nothing is running here.';
            await post(api, agentSessionId, `${key}:stopped`, { content: { type: 'response', body: why } });
          }
        },
      };
    }
    if (!body) return ignore('a prompt without text');

    if (row.pending) {
      const choice = findRepos(
        body,
        deps.repos.gitUrl,
        row.pending.candidates.map((c) => fullName(parseRepoLink(c, deps.repos.gitUrl) ?? splitName(c))),
      )[0];
      if (!choice) {
        await ask(api, row, row.pending, `${key}:ask-again`);
        return ignore('the answer named no offered repository; asked again');
      }
      await post(api, agentSessionId, `${key}:repo`, {
        content: { type: 'thought', body: `Working in ${fullName(choice)} (${actor.name}'s choice).` },
      });
      return start(api, row, { thread, actor: row.pending.actor, text: row.pending.text, repo: choice, key }, dlog);
    }

    const session = row.sessionId ? await context.getSession(row.sessionId) : await context.findSession(thread);
    if (!session) {
      await post(api, agentSessionId, `${key}:lost`, {
        content: {
          type: 'error',
          body: 'I have no work for this session any more. Mention me again on the issue to start over.',
        },
      });
      return ignore('no session for this agent session');
    }
    const inbound: Inbound =
      session.status === 'waiting' && session.pendingQuestion
        ? { kind: 'answer', thread, actor, questionId: session.pendingQuestion.questionId, text: body, deliveryId: key }
        : { kind: 'message', thread, actor, text: body, deliveryId: key };
    return {
      kind: 'inbound',
      inbound,
      async after(outcome) {
        dlog.info({ sessionId: session.id, outcome: outcome.kind }, 'Linear prompt handed to the session');
        if (outcome.kind === 'appended')
          await post(api, agentSessionId, `${key}:ack`, {
            content: { type: 'thought', body: 'Got it.' },
            ephemeral: true,
          });
      },
    };
  }

  return {
    source: 'linear',
    interpret: normalize,
    /** The last try failed: say so in the agent session, so it is not left waiting for an answer. */
    async tellFailure(delivery, reason, signal) {
      const event = parse(delivery);
      if (typeof event === 'string') return;
      const api = await deps.api(event.organizationId);
      await api.postActivity(
        event.agentSession.id,
        {
          id: stableUuid(`${event.agentSession.id}:${delivery.dedupeKey}:gave-up`),
          content: { type: 'error', body: `I could not process this request: ${reason}` },
        },
        signal,
      );
    },
  };
}

function splitName(name: string): RepoName {
  return parseRepoName(name) ?? { owner: '', repo: '' };
}
