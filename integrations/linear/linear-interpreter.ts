import type { Logger } from 'pino';
import type { Actor } from '../../src/core/actor.ts';
import type { InboundOutcome } from '../../src/core/inbound.ts';
import type { DeliveryInterpreter, ReceivedDelivery, StoredDelivery } from '../../src/core/delivery-interpreter.ts';
import { repoFullName } from '../../src/core/repo-ref.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { IssueForWork, LinearApi } from './linear-api.ts';
import { prompted } from './linear-prompts.ts';
import { parseRepoLink, resolveRepo, splitName } from './linear-repo-choice.ts';
import {
  ask,
  type EventScope,
  ignore,
  type Interpreted,
  type LinearErrand,
  type LinearSurfaceDeps,
  noIssueActivity,
  post,
  start,
  requesterOf,
} from './linear-steps.ts';
import { taskFromEvent } from './linear-task.ts';
import { withLinearUploads } from './linear-uploads.ts';
import { AgentSessionEvent, dedupeKeyOf } from './linear-webhook.ts';
import { stableUuid } from './stable-uuid.ts';

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

/**
 * Linear's side of the inbound pipeline. `created`: a first thought at once, then the task built
 * from the issue, a repository (named in the issue or comment, the team's setting, Linear's
 * suggestion, or asked for with a select elicitation), the session started, its page linked from
 * Linear and a delegated issue moved to the team's first started state (in `reply`). `prompted`
 * (linear-prompts.ts): the person's message steers the session, answers its question (or the
 * repository question), or with the stop signal stops the run. Every activity carries an id
 * derived from the delivery, so a retry re-posts nothing.
 */
export function createLinearInterpreter(deps: LinearSurfaceDeps): DeliveryInterpreter<LinearErrand> {
  return {
    source: 'linear',
    interpret: (delivery, signal) => interpret(deps, delivery, signal),
    reply: (errand, outcome) => reply(deps, errand, outcome),
    tellFailure: (delivery, reason, signal) => tellFailure(deps, delivery, reason, signal),
  };
}

async function interpret(deps: LinearSurfaceDeps, delivery: StoredDelivery, signal: AbortSignal): Promise<Interpreted> {
  const event = parse(delivery);
  if (typeof event === 'string') return ignore(event);
  const scope: EventScope = {
    deps,
    event,
    api: await deps.apis.forOrganization(event.organizationId),
    key: delivery.dedupeKey,
    log: deps.log.child({ agentSessionId: event.agentSession.id, action: event.action }),
  };
  const interpreted = await (event.action === 'created' ? created(scope) : prompted(scope));
  return withLinearUploads(deps.uploads, scope, interpreted, signal);
}

/** The stored body as an AgentSessionEvent, or why it is not one Patchbay handles. */
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

async function created(scope: EventScope): Promise<Interpreted> {
  const { deps, event, api, key } = scope;
  const agentSessionId = event.agentSession.id;
  const issue = event.agentSession.issue;
  const issueId = issue?.id ?? event.agentSession.issueId;
  if (!issueId) {
    await post(api, agentSessionId, `${key}:no-issue`, noIssueActivity);
    return ignore('the agent session has no issue');
  }
  // The acknowledgement comes first: Linear shows a session without an activity in 10 s as unresponsive.
  await post(api, agentSessionId, `${key}:ack`, {
    content: {
      type: 'thought',
      body: `Looking at ${issue?.identifier ?? 'the issue'}${issue ? ` "${issue.title}"` : ''}.`,
    },
  });
  const row = await deps.store.saveAgentSession({
    agentSessionId,
    organizationId: event.organizationId,
    issueId,
    issueIdentifier: issue?.identifier ?? issueId,
  });
  const thread: ThreadRef = { source: 'linear', agentSessionId, issueId };
  const actor = await requesterOf(api, event.agentSession.creator);
  const details = await api.issue(issueId).catch((error: unknown) => {
    scope.log.warn({ err: error }, 'could not read the issue from Linear; going on with the webhook alone');
    return undefined;
  });
  const text = taskFromEvent(event, details?.authorName ?? undefined);
  const joined = await joinLinkedSession(scope, details?.attachmentUrls ?? [], { thread, actor, text });
  if (joined) return joined;

  const installed = await deps.repos.installed().catch(() => [] as string[]);
  const teamKey = details?.teamKey ?? issue?.team.key;
  const resolved = await resolveRepo({ ...deps, event, api, installed, teamKey, log: scope.log });
  if (!resolved) {
    const candidates = installed.map((r) => deps.repos.repoUrl(splitName(r)));
    await ask(scope, row, { text, actor, candidates }, `${key}:ask`);
    return ignore('asked which repository to work in');
  }
  await post(api, agentSessionId, `${key}:repo`, {
    content: { type: 'thought', body: `Working in ${repoFullName(resolved.repo)} (${resolved.why}).` },
  });
  const moveIssue = details && details.delegateId === event.appUserId ? startedStateOf(details) : undefined;
  return start(scope, row, { thread, actor, text, repo: resolved.repo }, moveIssue);
}

/** An issue linked to a pull request of an existing session joins that conversation. */
async function joinLinkedSession(
  scope: EventScope,
  attachmentUrls: string[],
  input: { thread: ThreadRef; actor: Actor; text: string },
): Promise<Interpreted | undefined> {
  for (const url of attachmentUrls) {
    const linked = await sessionOfPull(scope.deps, url);
    if (!linked) continue;
    await scope.deps.context.sessions.addThread(linked.id, input.thread);
    const agentSessionId = scope.event.agentSession.id;
    return {
      kind: 'inbound',
      inbound: { kind: 'message', thread: input.thread, actor: input.actor, text: input.text, dedupeKey: scope.key },
      errand: { kind: 'bind-joined', organizationId: scope.event.organizationId, agentSessionId, sessionId: linked.id },
    };
  }
  return undefined;
}

/** The session whose pull request a link points at, if any. */
async function sessionOfPull(deps: LinearSurfaceDeps, url: string) {
  const repo = parseRepoLink(url, deps.repos.gitUrl);
  const number = /\/pull\/(\d+)/.exec(url)?.[1];
  if (!repo || !number) return undefined;
  return deps.context.sessions.findByThread({
    source: 'github',
    owner: repo.owner,
    repo: repo.repo,
    number: Number(number),
    kind: 'pull',
  });
}

/** The team's first started state, for an issue not yet started, completed or canceled. */
function startedStateOf(issue: IssueForWork): { issueId: string; stateId: string } | undefined {
  if (['started', 'completed', 'canceled'].includes(issue.stateType)) return undefined;
  const first = issue.states.find((s) => s.type === 'started');
  return first && { issueId: issue.id, stateId: first.id };
}

/** The session service handled the event: do what its errand says. Safe to repeat. */
async function reply(deps: LinearSurfaceDeps, errand: LinearErrand, outcome: InboundOutcome): Promise<void> {
  const api = await deps.apis.forOrganization(errand.organizationId);
  const log = deps.log.child({ agentSessionId: errand.agentSessionId });
  switch (errand.kind) {
    case 'bind-started': {
      // A retry after a half-finished attempt finds the session the first one started.
      const session = 'session' in outcome ? outcome.session : await deps.context.sessions.findByThread(errand.thread);
      if (!session) throw new Error(`the session service did not take the Linear session (${outcome.kind})`);
      await bindSession(deps, api, errand.agentSessionId, session.id, { pending: null });
      log.info({ sessionId: session.id, outcome: outcome.kind }, 'Linear session handed to the session service');
      if (errand.moveIssue)
        await api
          .moveIssue(errand.moveIssue.issueId, errand.moveIssue.stateId)
          .catch((error: unknown) => log.warn({ err: error }, 'could not move the issue to its started state'));
      return;
    }
    case 'bind-joined':
      await bindSession(deps, api, errand.agentSessionId, errand.sessionId, {});
      log.info({ sessionId: errand.sessionId }, 'Linear session joined the session of its linked pull request');
      return;
    case 'explain-stop':
      return explainStop(api, errand, outcome, log);
    case 'ack-prompt':
      log.info({ sessionId: errand.sessionId, outcome: outcome.kind }, 'Linear prompt handed to the session');
      if (outcome.kind === 'appended')
        await post(api, errand.agentSessionId, errand.seed, {
          content: { type: 'thought', body: 'Got it.' },
          ephemeral: true,
        });
      // A decision the service would not take (an address no thread may allow): say why.
      if (outcome.kind === 'refused')
        await post(api, errand.agentSessionId, errand.seed, { content: { type: 'thought', body: outcome.message } });
      return;
    default: {
      const _never: never = errand;
      return _never;
    }
  }
}

/** Binds the agent session to a Patchbay session and links the session's page from Linear. */
async function bindSession(
  deps: LinearSurfaceDeps,
  api: LinearApi,
  agentSessionId: string,
  sessionId: string,
  also: { pending?: null },
): Promise<void> {
  await deps.store.update(agentSessionId, { sessionId, ...also });
  await api.updateSession(agentSessionId, {
    externalUrls: [{ label: 'Patchbay session', url: `${deps.context.publicUrl}/sessions/${sessionId}` }],
  });
}

/** A stopped run reports itself (the thread's final response); otherwise say why nothing stopped. */
async function explainStop(
  api: LinearApi,
  errand: Extract<LinearErrand, { kind: 'explain-stop' }>,
  outcome: InboundOutcome,
  log: Logger,
): Promise<void> {
  log.info({ outcome: outcome.kind }, 'Linear stop request');
  if (outcome.kind !== 'not-running' && outcome.kind !== 'no-session') return;
  const why =
    outcome.kind === 'not-running'
      ? `Nothing is running: the session is ${outcome.session.status}.`
      : 'Nothing is running here.';
  await post(api, errand.agentSessionId, errand.seed, { content: { type: 'response', body: why } });
}

/** The last try failed: say so in the agent session, so it is not left waiting for an answer. */
async function tellFailure(
  deps: LinearSurfaceDeps,
  delivery: StoredDelivery,
  reason: string,
  signal: AbortSignal,
): Promise<void> {
  const event = parse(delivery);
  if (typeof event === 'string') return;
  const api = await deps.apis.forOrganization(event.organizationId);
  await api.postActivity(
    event.agentSession.id,
    {
      id: stableUuid(`${event.agentSession.id}:${delivery.dedupeKey}:gave-up`),
      content: { type: 'error', body: `I could not process this request: ${reason}` },
    },
    signal,
  );
}
