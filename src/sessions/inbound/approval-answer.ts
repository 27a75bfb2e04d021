import type { Actor } from '../../core/actor.ts';
import type { EventOf } from '../../core/events.ts';
import { relayedId, splitRelayedRequestId } from '../../core/relayed-approval.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import type { RunQueue } from '../worker/run-queue.ts';
import type { RequestMarker } from '../store/request-markers.ts';
import type { SessionStore } from '../store/session-store.ts';

/** A person's answer to an approval request, from any surface. */
export type ApprovalAnswer = {
  requestId: string;
  decision: 'approved' | 'denied';
  actor: Actor;
  /** slack, github, linear or web: where the answer was given. */
  surface: string;
  reason?: string | undefined;
  /**
   * The surface vouches that this person may answer for anyone (write access on GitHub, the
   * operator's token or page sign-in on the web); otherwise only the session's requester may.
   */
  vouched?: boolean | undefined;
};

export type ApprovalAnswerResult =
  | { kind: 'decided'; session: SessionRecord }
  /** This person may not decide it: the text says why, for the surface to tell them. */
  | { kind: 'not-allowed'; message: string }
  /** The session has no open request by that id (decided already, expired, or never asked). */
  | { kind: 'no-request' };

/** Whether `actor` may decide the session's requests without a surface vouching for them: the requester only. */
export function isRequester(session: SessionRecord, actor: Actor): boolean {
  return session.requester.source === actor.source && session.requester.id === actor.id;
}

type AnswerDeps = { store: SessionStore; queue: Pick<RunQueue, 'enqueue'>; now?: () => Date };

/**
 * Records a person's decision on the session's open approval request and queues the run that acts
 * on it (the held command runs, or the model gets the denial). The run does the rest: nothing here
 * touches the sandbox. A request a sub-task relayed into this session's log (its id names the
 * child: relayedId) is decided for the child, by the same rule: this session's requester,
 * or a person the surface vouches for.
 */
export async function answerApproval(
  deps: AnswerDeps,
  session: SessionRecord,
  answer: ApprovalAnswer,
  marker?: RequestMarker,
): Promise<ApprovalAnswerResult> {
  const pending = session.pendingQuestion?.approval;
  const live = pending?.live === true && session.status === 'running';
  const own = (session.status === 'waiting' || live) && pending?.requestId === answer.requestId;
  const relayed = own ? undefined : splitRelayedRequestId(answer.requestId);
  if (!own && !relayed) return { kind: 'no-request' };
  if (!answer.vouched && !isRequester(session, answer.actor))
    return {
      kind: 'not-allowed',
      message: `Only ${session.requester.name}, who asked for this session, can approve or deny its commands.`,
    };
  if (relayed)
    return answerForChild(deps, session, { ...answer, requestId: relayed.requestId }, relayed.childId, marker);
  const decided = live ? await decideLive(deps, session, answer, marker) : await decide(deps, session, answer, marker);
  return decided ? { kind: 'decided', session: decided.session } : { kind: 'no-request' };
}

/**
 * A decision an engine's hook is waiting for in the running run (see createEngineGate): written on
 * the log, where the run reads it; no run is queued. Undefined when another answer came first.
 */
async function decideLive(deps: AnswerDeps, session: SessionRecord, answer: ApprovalAnswer, marker?: RequestMarker) {
  const event = decisionEvent(deps, answer);
  const written = await deps.store.append(
    session.id,
    [{ event, dedupeKey: `approval-decided:${answer.requestId}` }],
    marker,
  );
  if (written.length === 0) return undefined;
  return { session: (await deps.store.get(session.id)) ?? session, event };
}

function decisionEvent(deps: AnswerDeps, answer: ApprovalAnswer): EventOf<'approval-decided'> {
  return {
    type: 'approval-decided',
    requestId: answer.requestId,
    decision: answer.decision,
    actor: answer.actor,
    surface: answer.surface,
    ...(answer.reason && { reason: answer.reason }),
    at: (deps.now?.() ?? new Date()).toISOString(),
  };
}

/**
 * A parent's thread decided its sub-task's request: the child records the decision and is queued
 * (as if its own thread had answered), and the parent's log gets the same decision under the
 * relayed id, so its threads close the request they showed.
 */
async function answerForChild(
  deps: AnswerDeps,
  parent: SessionRecord,
  answer: ApprovalAnswer,
  childId: string,
  marker?: RequestMarker,
): Promise<ApprovalAnswerResult> {
  const child = await deps.store.get(childId);
  const pending = child?.pendingQuestion?.approval;
  if (child?.parentId !== parent.id || child.status !== 'waiting' || pending?.requestId !== answer.requestId)
    return { kind: 'no-request' };
  const decided = await decide(deps, child, answer, marker);
  if (!decided) return { kind: 'no-request' };
  const requestId = relayedId(childId, answer.requestId);
  await deps.store.append(parent.id, [
    { event: { ...decided.event, requestId }, dedupeKey: `approval-decided:${requestId}` },
  ]);
  return { kind: 'decided', session: (await deps.store.get(parent.id)) ?? parent };
}

/** Writes the decision on the session's log and queues its run; undefined when another answer came first. */
async function decide(deps: AnswerDeps, session: SessionRecord, answer: ApprovalAnswer, marker?: RequestMarker) {
  const event = decisionEvent(deps, answer);
  const { session: after, applied } = await deps.store.transition(session.id, 'enqueue', {
    events: [{ event, dedupeKey: `approval-decided:${answer.requestId}` }],
    ...(marker && { marker }),
  });
  if (!applied) return undefined;
  await deps.queue.enqueue(session.id);
  return { session: after, event };
}
