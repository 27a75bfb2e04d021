import type { EventOf } from '../core/events.ts';
import type { PendingQuestion } from '../core/session-record.ts';
import type { ToolCall } from '../models/model-provider.ts';
import type { RunOutcome } from './agent-runner.ts';
import { recordCallResult, recordStep, type RunState, unreadUserMessages } from './run-state.ts';
import type { ApprovalControl } from './tool.ts';

/** A held command's request, as the session keeps it while it waits. */
export type PendingApproval = NonNullable<PendingQuestion['approval']>;

/** What the thread is told approving does. */
export const APPROVING_RUNS_ONCE =
  "Approving runs exactly this command once, in the session's sandbox, and hands its output to the agent. Denying hands the agent your reason instead; nothing runs.";

/**
 * Records a held call's approval request and moves the session's open question to it. The call
 * stays without a result: the decision, when it comes, completes it (resumeApproval).
 */
export async function requestApproval(
  run: RunState,
  call: ToolCall,
  control: ApprovalControl,
): Promise<PendingQuestion> {
  const expiresAt = new Date(run.now() + run.limits.approvalTimeoutMs).toISOString();
  const approval: PendingApproval = {
    requestId: call.id,
    command: control.command,
    classes: [...new Set(control.findings.map((f) => f.class))],
    reasons: control.findings.map((f) => f.reason),
    expiresAt,
  };
  const step = approvalRequestStep(approval);
  await recordStep(run, step);
  return step.patch.pendingQuestion;
}

/**
 * What recording a held command's approval request writes, for Patchbay's loop and for an engine's
 * gate alike: the `approval-requested` event, and the session's open question moved to it.
 */
export function approvalRequestStep(approval: PendingApproval) {
  const { requestId, command, classes, reasons, expiresAt } = approval;
  const pendingQuestion: PendingQuestion = {
    questionId: `approval:${requestId}`,
    toolCallId: requestId,
    question: `Approve running \`${command}\`? It was held for ${classes.join(', ')}: ${reasons.join(' ')}`,
    choices: ['Approve once', 'Deny'],
    approval,
  };
  const event: EventOf<'approval-requested'> = {
    type: 'approval-requested',
    requestId,
    command,
    classes,
    reasons,
    approving: APPROVING_RUNS_ONCE,
    expiresAt,
  };
  return { events: [{ event, dedupeKey: `approval-requested:${requestId}` }], patch: { pendingQuestion } };
}

type Decided = EventOf<'approval-decided'>;

/**
 * A held call on a resumed run: approved, it runs (once, as `runApproved` does it); denied or
 * expired, the model gets the reason as the call's error. Without a decision it keeps waiting,
 * unless it expired or people wrote in the thread instead of deciding (then it is denied, and
 * their messages reach the model next).
 */
export async function resumeApproval(
  run: RunState,
  call: ToolCall,
  pending: PendingQuestion & { approval: PendingApproval },
  runApproved: (command: string) => Promise<unknown>,
): Promise<RunOutcome | undefined> {
  const decided = await decisionOf(run, pending.approval);
  if (!decided) return { kind: 'waiting', question: pending };
  await recordStep(run, {
    events: decided.seq ? [] : [{ event: decided.event, dedupeKey: `approval-decided:${call.id}` }],
    patch: { pendingQuestion: null },
  });
  if (decided.event.decision === 'approved') {
    await runApproved(pending.approval.command);
    return undefined;
  }
  const content = `Not approved: ${describeRefusal(decided.event, run.limits.approvalTimeoutMs)} The command did not run.`;
  await recordCallResult(run, call, content, true);
  return undefined;
}

/** The request's decision: a person's from the log (with its seq), or one the run makes now (expiry, a reply instead). */
async function decisionOf(
  run: RunState,
  approval: PendingApproval,
): Promise<{ event: Decided; seq?: number } | undefined> {
  const events = await run.input.runLog.events(run.input.sessionId, { types: ['approval-decided'] });
  const logged = events.find((e) => e.event.type === 'approval-decided' && e.event.requestId === approval.requestId);
  if (logged) return { event: logged.event as Decided, seq: logged.seq };
  const at = new Date(run.now()).toISOString();
  const base = { type: 'approval-decided' as const, requestId: approval.requestId, at };
  if (run.now() >= Date.parse(approval.expiresAt))
    return { event: { ...base, decision: 'expired', surface: 'system', reason: 'no one answered' } };
  const replies = await unreadUserMessages(run);
  const reply = replies[0];
  if (!reply) return undefined;
  return {
    event: {
      ...base,
      decision: 'denied',
      actor: reply.event.actor,
      surface: reply.event.actor.source,
      reason: 'the thread replied instead of deciding (the reply follows)',
    },
  };
}

function describeRefusal(event: Decided, timeoutMs: number): string {
  if (event.decision === 'expired')
    return `no one answered within ${Math.round(timeoutMs / 60_000)} minutes, so it counts as denied.`;
  const who = event.actor?.name ?? 'a person';
  return event.reason ? `${who} denied it: ${event.reason}.` : `${who} denied it.`;
}
