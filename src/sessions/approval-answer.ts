import type { Actor } from '../core/actor.ts';
import type { SessionRecord } from '../core/session-record.ts';
import type { RunQueue } from './run-queue.ts';
import type { RequestMarker } from './request-markers.ts';
import type { SessionStore } from './session-store.ts';

/** A person's answer to an approval request, from any surface (issue 23). */
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

/**
 * Records a person's decision on the session's open approval request and queues the run that acts
 * on it (the held command runs, or the model gets the denial). The run does the rest: nothing here
 * touches the sandbox.
 */
export async function answerApproval(
  deps: { store: SessionStore; queue: Pick<RunQueue, 'enqueue'>; now?: () => Date },
  session: SessionRecord,
  answer: ApprovalAnswer,
  marker?: RequestMarker,
): Promise<ApprovalAnswerResult> {
  const pending = session.pendingQuestion?.approval;
  if (session.status !== 'waiting' || pending?.requestId !== answer.requestId) return { kind: 'no-request' };
  if (!answer.vouched && !isRequester(session, answer.actor))
    return {
      kind: 'not-allowed',
      message: `Only ${session.requester.name}, who asked for this session, can approve or deny its commands.`,
    };
  const at = (deps.now?.() ?? new Date()).toISOString();
  const event = {
    type: 'approval-decided' as const,
    requestId: answer.requestId,
    decision: answer.decision,
    actor: answer.actor,
    surface: answer.surface,
    ...(answer.reason && { reason: answer.reason }),
    at,
  };
  const { session: after, applied } = await deps.store.transition(session.id, 'enqueue', {
    events: [{ event, dedupeKey: `approval-decided:${answer.requestId}` }],
    ...(marker && { marker }),
  });
  if (!applied) return { kind: 'no-request' };
  await deps.queue.enqueue(session.id);
  return { kind: 'decided', session: after };
}
