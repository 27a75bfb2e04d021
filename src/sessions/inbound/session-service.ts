import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ciActor, type Actor } from '../../core/actor.ts';
import type { ArtifactStore } from '../../core/artifact-store.ts';
import type { AttachmentRef } from '../../core/attachment.ts';
import { parseAutonomyPrefix } from '../../core/autonomy.ts';
import type { EventOf } from '../../core/events.ts';
import { PatchbayError } from '../../core/errors.ts';
import { Inbound } from '../../core/inbound.ts';
import { relayedId, splitRelayedRequestId } from '../../core/relayed-approval.ts';
import type { ThreadRef } from '../../core/thread-ref.ts';
import type { RunQueue } from '../worker/run-queue.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import { isTerminal } from '../../core/session-status.ts';
import { DuplicateRequest, type RequestMarker } from '../store/request-markers.ts';
import type { SessionStore } from '../store/session-store.ts';
import { type ApprovalAnswer, type ApprovalAnswerResult, answerApproval } from './approval-answer.ts';
import {
  allowEgress,
  revokeEgress,
  type EgressAllowDeps,
  type EgressAllowRequest,
  type EgressAllowResult,
} from './egress-allowances.ts';

export type HandleResult =
  | { kind: 'started'; session: SessionRecord }
  | { kind: 'appended'; session: SessionRecord }
  | { kind: 'stopped'; session: SessionRecord }
  | { kind: 'not-running'; session: SessionRecord }
  | { kind: 'duplicate' }
  | { kind: 'no-session' }
  | { kind: 'refused'; message: string };

export type SessionService = ReturnType<typeof createSessionService>;

/** What the service's steps work with. */
type ServiceDeps = {
  store: SessionStore;
  queue: Pick<RunQueue, 'enqueue'>;
  /** Where the pictures attached to messages wait for their session. */
  artifacts?: Pick<ArtifactStore, 'attach'> | undefined;
  log: Logger;
  newId: () => string;
  /** Where allowed hosts are kept (blocked connections decided in the thread). */
  egress: EgressAllowDeps;
};

/** What starts a session: the thread it came from, who asked, the task and the repository. */
type StartInput = {
  thread: ThreadRef;
  actor: Actor;
  text: string;
  repo: string;
  baseBranch?: string | undefined;
  branch?: string | undefined;
  attachments?: AttachmentRef[] | undefined;
};

/** What a person said to a session: a message, or an answer to the agent's question. */
type Said = { actor: Actor; text: string; questionId?: string | undefined; attachments?: AttachmentRef[] | undefined };

/**
 * Turns inbound commands into session state: find or create the session for the thread, append
 * the message to the event log, and enqueue a run. Does no model or sandbox work itself, so
 * webhook receivers can call it and acknowledge at once.
 */
export function createSessionService(options: {
  store: SessionStore;
  queue: Pick<RunQueue, 'enqueue'>;
  artifacts?: Pick<ArtifactStore, 'attach'> | undefined;
  log: Logger;
  newId?: () => string;
  /** The repositories' knowledge, where a host allowed for a repository is kept, and Patchbay's own host names. */
  egress?: Omit<EgressAllowDeps, 'store'>;
}) {
  const deps: ServiceDeps = {
    ...options,
    newId: options.newId ?? randomUUID,
    egress: { ...options.egress, store: options.store },
  };
  return {
    handle: (input: Inbound) => handle(deps, input),
    start: (input: StartInput) => start(deps, input),
    async sendMessage(
      sessionId: string,
      actor: Actor,
      text: string,
      questionId?: string,
      attachments?: AttachmentRef[],
    ): Promise<HandleResult> {
      return message(deps, await mustGet(deps.store, sessionId), { actor, text, questionId, attachments });
    },
    async stop(sessionId: string, actor: Actor): Promise<HandleResult> {
      return stop(deps, await mustGet(deps.store, sessionId), actor);
    },
    /** A person's decision on a held command (answerApproval): recorded, and the run that acts on it queued. */
    async answerApproval(sessionId: string, answer: ApprovalAnswer): Promise<ApprovalAnswerResult> {
      return answerApproval(deps, await mustGet(deps.store, sessionId), answer);
    },
    /** A person allows a refused host for the session or its repository (allowEgress). */
    async allowEgress(sessionId: string, request: EgressAllowRequest): Promise<EgressAllowResult> {
      return allowEgress(deps.egress, await mustGet(deps.store, sessionId), request);
    },
    /** A repository's allowed host removed (revokeEgress); false when it had none by that name. */
    revokeEgress: (repo: string, revoke: Parameters<typeof revokeEgress>[2]) => revokeEgress(deps.egress, repo, revoke),
  };
}

/** Applies one inbound command to the session of its thread, once per request (its dedupe key). */
async function handle(deps: ServiceDeps, input: Inbound): Promise<HandleResult> {
  const inbound = Inbound.parse(input);
  // The dedupe key is recorded in the same transaction as what the request writes, so a
  // redelivery writes nothing twice and a failed write leaves the redelivery free to retry.
  const marker = inbound.dedupeKey ? { source: inbound.thread.source, id: inbound.dedupeKey } : undefined;
  try {
    const existing = await deps.store.findByThread(inbound.thread);
    switch (inbound.kind) {
      case 'start':
        if (existing) return await message(deps, existing, inbound, marker);
        return await start(deps, inbound, marker);
      case 'message':
      case 'answer':
        return existing ? await message(deps, existing, inbound, marker) : { kind: 'no-session' };
      case 'stop':
        return existing ? await stop(deps, existing, inbound.actor, marker) : { kind: 'no-session' };
      case 'approval':
        return existing ? await approval(deps, existing, inbound, marker) : { kind: 'no-session' };
      case 'ci-failed':
        return existing ? await ciFailed(deps, existing, inbound, marker) : { kind: 'no-session' };
      case 'egress-allow':
        return existing ? await egressAllow(deps, existing, inbound, marker) : { kind: 'no-session' };
      default: {
        const _never: never = inbound;
        return _never;
      }
    }
  } catch (error) {
    if (!(error instanceof DuplicateRequest)) throw error;
    deps.log.info({ dedupeKey: inbound.dedupeKey }, 'duplicate request ignored');
    return { kind: 'duplicate' };
  }
}

async function message(
  deps: ServiceDeps,
  session: SessionRecord,
  said: Said,
  marker?: RequestMarker,
): Promise<HandleResult> {
  const asking = await askingChild(deps.store, session, said.questionId);
  if (asking) {
    const result = await message(deps, asking, { ...said, questionId: asking.pendingQuestion!.questionId }, marker);
    // The question asked in the parent's threads is answered there too.
    const questionId = relayedId(asking.id, asking.pendingQuestion!.questionId);
    await deps.store.append(session.id, [
      { event: { type: 'question-answered', questionId, actor: said.actor, text: said.text } },
    ]);
    return result;
  }
  // The pictures join the session before the message that shows them: the page draws the message
  // as soon as it is recorded and asks for its pictures at once, which the session's own route
  // serves only once they are the session's.
  await attach(deps.artifacts, session.id, said.attachments);
  const { session: after } = await deps.store.transition(session.id, 'enqueue', {
    events: [{ event: userMessage(said) }],
    ...(marker && { marker }),
  });
  await deps.queue.enqueue(session.id);
  return { kind: 'appended', session: after };
}

/**
 * The sub-task a message in its parent's threads answers: while the parent waits on its children
 * with no question of its own, a child waiting on a question (asked in the parent's threads, see
 * session-children.ts) takes the message as its answer: the child the answered question's relayed
 * id names (a button or the page's choice), else the first that asks. Undefined: the message is the parent's.
 */
async function askingChild(
  store: SessionStore,
  parent: SessionRecord,
  questionId: string | undefined,
): Promise<SessionRecord | undefined> {
  if (parent.status !== 'waiting' || parent.pendingQuestion) return undefined;
  const named = questionId ? splitRelayedRequestId(questionId) : undefined;
  for (const child of await store.children(parent.id)) {
    if (child.status !== 'waiting' || (named && child.sessionId !== named.childId)) continue;
    const record = await store.get(child.sessionId);
    if (record?.pendingQuestion && !record.pendingQuestion.approval) return record;
  }
  return undefined;
}

async function stop(
  deps: ServiceDeps,
  session: SessionRecord,
  actor: Actor,
  marker?: RequestMarker,
): Promise<HandleResult> {
  const { session: after, applied } = await deps.store.transition(session.id, 'cancel', {
    reason: `stopped by ${actor.name}`,
    ...(marker && { marker }),
  });
  // A stop on the parent stops its sub-tasks (their runs abort on the status change, as any stop).
  for (const child of await deps.store.children(session.id)) {
    if (isTerminal(child.status)) continue;
    await deps.store.transition(child.sessionId, 'cancel', {
      reason: `its parent session was stopped by ${actor.name}`,
    });
  }
  return applied ? { kind: 'stopped', session: after } : { kind: 'not-running', session: after };
}

/** Records the CI failure; a follow-up also hands it to the agent and queues a run. */
async function ciFailed(
  deps: ServiceDeps,
  session: SessionRecord,
  inbound: Extract<Inbound, { kind: 'ci-failed' }>,
  marker?: RequestMarker,
): Promise<HandleResult> {
  const failed = { event: { type: 'ci-failed' as const, ...inbound.failure } };
  if (!inbound.failure.followUp) {
    await deps.store.append(session.id, [failed], marker);
    return { kind: 'appended', session: (await deps.store.get(session.id)) ?? session };
  }
  const message = { event: { type: 'user-message' as const, actor: ciActor, text: inbound.text } };
  const { session: after } = await deps.store.transition(session.id, 'enqueue', {
    events: [failed, message],
    ...(marker && { marker }),
  });
  await deps.queue.enqueue(session.id);
  deps.log.info({ sessionId: session.id, commit: inbound.failure.commit }, 'CI follow-up queued');
  return { kind: 'appended', session: after };
}

async function start(deps: ServiceDeps, input: StartInput, marker?: RequestMarker): Promise<HandleResult> {
  const id = deps.newId();
  // Every surface's task comes through here: "plan first: …" sets the session's autonomy and leaves the task.
  const asked = parseAutonomyPrefix(input.text);
  const { session } = await deps.store.create({
    ...(marker && { marker }),
    id,
    repo: input.repo,
    prompt: asked.text,
    title: titleFrom(asked.text),
    ...(asked.autonomy && { autonomy: asked.autonomy }),
    requester: input.actor,
    thread: input.thread,
    ...(input.baseBranch && { baseBranch: input.baseBranch }),
    ...(input.branch && { branch: input.branch }),
    attachments: input.attachments,
  });
  await attach(deps.artifacts, id, input.attachments);
  await deps.queue.enqueue(id);
  deps.log.info({ sessionId: id, repo: input.repo }, 'session started');
  return { kind: 'started', session };
}

function userMessage(said: Said): EventOf<'user-message'> {
  const { actor, text, questionId, attachments } = said;
  return {
    type: 'user-message',
    actor,
    text,
    ...(questionId && { questionId }),
    ...(attachments?.length && { attachments }),
  };
}

/** The message's pictures join its session: the page lists them, the runner reads them. */
async function attach(
  artifacts: Pick<ArtifactStore, 'attach'> | undefined,
  sessionId: string,
  attachments: AttachmentRef[] | undefined,
): Promise<void> {
  if (artifacts && attachments?.length)
    await artifacts.attach(
      sessionId,
      attachments.map((a) => a.artifactId),
    );
}

/** An approval decision from a thread: recorded and acted on, or refused with the words to say why. */
async function approval(
  deps: ServiceDeps,
  session: SessionRecord,
  inbound: Extract<Inbound, { kind: 'approval' }>,
  marker?: RequestMarker,
): Promise<HandleResult> {
  const { actor, requestId, decision, reason, vouched } = inbound;
  const answer = { requestId, decision, actor, surface: inbound.thread.source, reason, vouched };
  const result = await answerApproval(deps, session, answer, marker);
  if (result.kind === 'decided') return { kind: 'appended', session: result.session };
  if (result.kind === 'not-allowed') return { kind: 'refused', message: result.message };
  return { kind: 'refused', message: 'That request is no longer open: it was decided already, or it expired.' };
}

/** An allow from a thread: recorded (the proxy reads it on its next connection), or refused with the words to say why. */
async function egressAllow(
  deps: ServiceDeps,
  session: SessionRecord,
  inbound: Extract<Inbound, { kind: 'egress-allow' }>,
  marker?: RequestMarker,
): Promise<HandleResult> {
  const { actor, host, port, scope, vouched } = inbound;
  const request = { host, port, scope, actor, surface: inbound.thread.source, vouched };
  const result = await allowEgress(deps.egress, session, request, marker);
  if (result.kind === 'refused') return { kind: 'refused', message: result.message };
  return { kind: 'appended', session: (await deps.store.get(session.id)) ?? session };
}

async function mustGet(store: SessionStore, sessionId: string): Promise<SessionRecord> {
  const session = await store.get(sessionId);
  if (!session) throw new PatchbayError('not_found', `session ${sessionId} does not exist`);
  return session;
}

/** A short title from the task's first line. */
export function titleFrom(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  return line.length > 72 ? `${line.slice(0, 69).trimEnd()}...` : line || 'Untitled task';
}
