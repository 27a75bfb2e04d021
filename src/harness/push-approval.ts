import type { EventOf } from '../core/events.ts';
import type { RunLog, TransitionResult } from '../core/run-log.ts';
import type { PendingQuestion } from '../core/session-record.ts';
import { lastHumanSeq } from './gates/harness-messages.ts';
import type { Committed } from './ship-changes.ts';

/** A push the harness holds carries this tool-call id: no tool call waits on it. */
export const pushApprovalCall = 'push-approval';

/** What the thread is told approving a push does. */
export const APPROVING_PUSHES =
  "Approving lets the harness push this session's branch (after its checks) and open or update the pull request. Denying leaves the work committed in the session's workspace, unpushed.";

/** What a push hold asks of its run: go on and push, or stop here (asked, or denied) with this outcome. */
export type PushHold = { kind: 'push' } | { kind: 'stop'; transition: TransitionResult };

type Decided = EventOf<'approval-decided'>;

/**
 * Autonomy ask-before-push: before the work of the latest request is pushed, a person approves it
 * through the approval flow (the same request, buttons and answers as a held command). Approved:
 * the run goes on to its gates and push, and a rework of the same request needs no second
 * approval. Denied or expired: the session finishes with the work unpushed and says so. Not yet
 * decided: the request is recorded (once) and the session waits without holding a worker.
 */
export async function holdPush(
  store: Pick<RunLog, 'events' | 'commitStep' | 'transition'>,
  input: { sessionId: string; branch: string; committed: Committed; timeoutMs: number; now?: () => number },
): Promise<PushHold> {
  const { sessionId, branch, committed } = input;
  const now = input.now ?? Date.now;
  const events = await store.events(sessionId);
  const requestId = `push:${lastHumanSeq(events)}`;
  const decided = events.findLast((e) => e.event.type === 'approval-decided' && e.event.requestId === requestId)
    ?.event as Decided | undefined;
  const requested = events.find((e) => e.event.type === 'approval-requested' && e.event.requestId === requestId)
    ?.event as EventOf<'approval-requested'> | undefined;
  if (decided?.decision === 'approved') {
    await store.commitStep(sessionId, { patch: { pendingQuestion: null } });
    return { kind: 'push' };
  }
  if (decided) return { kind: 'stop', transition: await finishUnpushed(store, sessionId, branch, decided) };
  if (requested && now() >= Date.parse(requested.expiresAt)) {
    const expired: Decided = {
      type: 'approval-decided',
      requestId,
      decision: 'expired',
      surface: 'system',
      reason: 'no one answered',
      at: new Date(now()).toISOString(),
    };
    await store.commitStep(sessionId, { events: [{ event: expired, dedupeKey: `approval-decided:${requestId}` }] });
    return { kind: 'stop', transition: await finishUnpushed(store, sessionId, branch, expired) };
  }
  const expiresAt = requested?.expiresAt ?? new Date(now() + input.timeoutMs).toISOString();
  return { kind: 'stop', transition: await askToPush(store, { sessionId, branch, committed, requestId, expiresAt }) };
}

async function askToPush(
  store: Pick<RunLog, 'transition'>,
  input: { sessionId: string; branch: string; committed: Committed; requestId: string; expiresAt: string },
): Promise<TransitionResult> {
  const { requestId, expiresAt, committed } = input;
  const command = `git push origin ${input.branch}`;
  const classes = ['push'];
  const changed = `${committed.filesChanged} file${committed.filesChanged === 1 ? '' : 's'} changed at ${committed.head.slice(0, 12)}`;
  const reasons = [`This session asks a person before each push (autonomy ask-before-push); ${changed}.`];
  const approval = { requestId, command, classes, reasons, expiresAt };
  const question: PendingQuestion = {
    questionId: `approval:${requestId}`,
    toolCallId: pushApprovalCall,
    question: `Approve pushing ${input.branch}? ${reasons[0]}`,
    choices: ['Approve once', 'Deny'],
    approval,
  };
  return store.transition(input.sessionId, 'ask', {
    reason: 'waiting for a person to approve the push',
    patch: { pendingQuestion: question },
    events: [
      {
        event: { type: 'approval-requested', ...approval, approving: APPROVING_PUSHES },
        dedupeKey: `approval-requested:${requestId}`,
      },
    ],
    unlessUnread: true,
  });
}

/** A denied or expired push: the session finishes, the work committed in its workspace and not pushed. */
function finishUnpushed(
  store: Pick<RunLog, 'transition'>,
  sessionId: string,
  branch: string,
  decided: Decided,
): Promise<TransitionResult> {
  const why =
    decided.decision === 'expired'
      ? 'no one approved the push in time'
      : `${decided.actor?.name ?? 'a person'} denied the push${decided.reason ? `: ${decided.reason}` : ''}`;
  const unpushed = `Not pushed: ${why}. The work stays committed on ${branch} in the session's workspace; reply to change it, or to ask for the push again.`;
  return store.transition(sessionId, 'finish', {
    reason: `not pushed: ${why}`,
    patch: { pendingQuestion: null, result: { branch, unpushed }, error: null },
    unlessUnread: true,
  });
}

/**
 * A push request people answered with a message instead of a decision: it is closed as denied
 * ("the thread replied instead"), as a held command's is, and their message goes to the agent,
 * whose next finished round asks again for the new request. Called before the agent's round.
 */
export async function closeRepliedPush(store: Pick<RunLog, 'get' | 'events' | 'commitStep'>, sessionId: string) {
  const pending = (await store.get(sessionId))?.pendingQuestion;
  if (pending?.toolCallId !== pushApprovalCall || !pending.approval) return;
  const { requestId } = pending.approval;
  const events = await store.events(sessionId);
  const asked = events.find((e) => e.event.type === 'approval-requested' && e.event.requestId === requestId);
  const reply = events.find(
    (e) => e.seq > (asked?.seq ?? 0) && e.event.type === 'user-message' && e.event.actor.source !== 'system',
  );
  if (reply?.event.type !== 'user-message') return;
  const denied: Decided = {
    type: 'approval-decided',
    requestId,
    decision: 'denied',
    actor: reply.event.actor,
    surface: reply.event.actor.source,
    reason: 'the thread replied instead of deciding (the reply follows)',
    at: reply.at,
  };
  await store.commitStep(sessionId, {
    events: [{ event: denied, dedupeKey: `approval-decided:${requestId}` }],
    patch: { pendingQuestion: null },
  });
}
