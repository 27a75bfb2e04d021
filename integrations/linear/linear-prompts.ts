import { approvalPrompt } from './linear-approvals.ts';
import { egressPrompt } from './linear-egress.ts';
import type { Actor } from '../../src/core/actor.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { repoFullName } from '../../src/core/repo-ref.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import { offeredRepoNamed } from './linear-repo-choice.ts';
import {
  ask,
  type EventScope,
  ignore,
  type Interpreted,
  noIssueActivity,
  post,
  start,
  toActor,
} from './linear-steps.ts';
import type { LinearAgentSession } from './linear-store.ts';

/**
 * A person's prompt in an agent session: with the stop signal it stops the run (or the question
 * that waits for a repository); in a session still waiting for its repository it answers that
 * question; otherwise it steers the session, or answers the question the session asked.
 */
export async function prompted(scope: EventScope): Promise<Interpreted> {
  const { event, api, key } = scope;
  const agentSessionId = event.agentSession.id;
  const activity = event.agentActivity;
  const body = activity?.content.body?.trim() ?? '';
  const actor = toActor(activity?.user);
  const issueId = event.agentSession.issue?.id ?? event.agentSession.issueId ?? '';
  const thread: ThreadRef = { source: 'linear', agentSessionId, issueId };
  const row = await agentSessionRow(scope, issueId);
  if (!row) {
    await post(api, agentSessionId, `${key}:no-issue`, noIssueActivity);
    return ignore('the agent session has no issue');
  }
  if (activity?.signal === 'stop') return stop(scope, row, { thread, actor });
  if (!body) return ignore('a prompt without text');
  if (row.pending) return answerRepoQuestion(scope, row, { thread, actor, body });
  return toSession(scope, row, { thread, actor, body });
}

/** The agent session's row; one is made for an agent session Patchbay has not seen (it has an issue). */
async function agentSessionRow(scope: EventScope, issueId: string): Promise<LinearAgentSession | undefined> {
  const { store } = scope.deps;
  const agentSession = scope.event.agentSession;
  const known = await store.agentSession(agentSession.id);
  if (known || !issueId) return known;
  return store.saveAgentSession({
    agentSessionId: agentSession.id,
    organizationId: scope.event.organizationId,
    issueId,
    issueIdentifier: agentSession.issue?.identifier ?? issueId,
  });
}

/** The stop signal: before any work it drops the waiting task; otherwise the session service stops the run. */
async function stop(
  scope: EventScope,
  row: LinearAgentSession,
  input: { thread: ThreadRef; actor: Actor },
): Promise<Interpreted> {
  const { api, key } = scope;
  if (row.pending) {
    await scope.deps.store.update(row.agentSessionId, { pending: null });
    await post(api, row.agentSessionId, `${key}:stopped`, {
      content: { type: 'response', body: 'Stopped. I had not started any work yet.' },
    });
    return ignore('stopped before any work started');
  }
  return {
    kind: 'inbound',
    inbound: { kind: 'stop', thread: input.thread, actor: input.actor, dedupeKey: key },
    errand: {
      kind: 'explain-stop',
      organizationId: scope.event.organizationId,
      agentSessionId: row.agentSessionId,
      seed: `${key}:stopped`,
    },
  };
}

/** An answer to "which repository?": one of those offered starts the waiting task; anything else asks again. */
async function answerRepoQuestion(
  scope: EventScope,
  row: LinearAgentSession,
  input: { thread: ThreadRef; actor: Actor; body: string },
): Promise<Interpreted> {
  const pending = row.pending!;
  const choice = offeredRepoNamed(input.body, pending.candidates, scope.deps.repos.gitUrl);
  if (!choice) {
    await ask(scope, row, pending, `${scope.key}:ask-again`);
    return ignore('the answer named no offered repository; asked again');
  }
  await post(scope.api, row.agentSessionId, `${scope.key}:repo`, {
    content: { type: 'thought', body: `Working in ${repoFullName(choice)} (${input.actor.name}'s choice).` },
  });
  return start(scope, row, { thread: input.thread, actor: pending.actor, text: pending.text, repo: choice });
}

/** A prompt for the session: an answer when it waits on a question, else a message that steers it. */
async function toSession(
  scope: EventScope,
  row: LinearAgentSession,
  input: { thread: ThreadRef; actor: Actor; body: string },
): Promise<Interpreted> {
  const { deps, key } = scope;
  const { thread, actor, body } = input;
  const agentSessionId = scope.event.agentSession.id;
  const session = row.sessionId
    ? await deps.context.sessions.get(row.sessionId)
    : await deps.context.sessions.findByThread(thread);
  if (!session) {
    await post(scope.api, agentSessionId, `${key}:lost`, {
      content: {
        type: 'error',
        body: 'I have no work for this session any more. Mention me again on the issue to start over.',
      },
    });
    return ignore('no session for this agent session');
  }
  const inbound: Inbound =
    (await approvalPrompt(deps.context.sessions, session, { thread, actor, body, dedupeKey: key })) ??
    egressPrompt({ thread, actor, body, dedupeKey: key }) ??
    (session.status === 'waiting' && session.pendingQuestion
      ? { kind: 'answer', thread, actor, questionId: session.pendingQuestion.questionId, text: body, dedupeKey: key }
      : { kind: 'message', thread, actor, text: body, dedupeKey: key });
  return {
    kind: 'inbound',
    inbound,
    errand: {
      kind: 'ack-prompt',
      organizationId: scope.event.organizationId,
      agentSessionId,
      sessionId: session.id,
      seed: `${key}:ack`,
    },
  };
}
