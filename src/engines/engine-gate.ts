import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { approvalRequestStep, type PendingApproval } from '../agent/approval-calls.ts';
import { gateCommand } from '../agent/command-gate.ts';
import { checkCommand } from '../agent/command-policy.ts';
import type { ToolContext } from '../agent/tool.ts';
import type { EventOf } from '../core/events.ts';
import type { RunLog } from '../core/run-log.ts';

/** What the gate answers an engine's hook about one tool call. `pending`: held for a person; ask again. */
export type EngineGateAnswer = { decision: 'allow' } | { decision: 'deny'; reason: string } | { decision: 'pending' };

/** One tool call an engine's permission hook asks about: the engine's id for the call, and its command. */
export type EngineGateCall = { callId: string; command: string };

/** The run's gate for its engine's commands, reached through the relay (POST /engine-relay/gate). */
export type EngineGate = {
  /** Must not throw: a failure is a denial. */
  judge(call: EngineGateCall): Promise<EngineGateAnswer>;
  /** The run ended: a request still open is closed as expired, so the session does not keep it. */
  close(): Promise<void>;
};

export type EngineGateOptions = {
  sessionId: string;
  sandbox: Pick<Sandbox, 'readFile' | 'workdir'>;
  runLog: Pick<RunLog, 'commitStep' | 'events'>;
  /** The approval rules and autonomy of the session, as Patchbay's own loop gets them; absent: the plain policy only. */
  approvals: ToolContext['approvals'];
  approvalTimeoutMs: number;
  signal: AbortSignal;
  log: Logger;
  now?: () => number;
  /** How long one hook request waits for a person's decision before it answers `pending` (the hook asks again). */
  waitMs?: number;
  pollMs?: number;
};

/** A command held for a person, and its decision once known. */
type Hold = { approval: PendingApproval; answer?: EngineGateAnswer };

/**
 * The same gate as run_shell (gateCommand: the approval rules, then the command policy), for an
 * engine's commands: allowed commands run, refused ones are denied with the reason the engine is
 * shown, and held ones become the session's approval request (the same `approval-requested` event
 * and open question as Patchbay's loop, so the thread and the page offer to decide) while the
 * engine's hook waits; the person's decision (or the expiry) is its answer. The engine's process
 * keeps running meanwhile, so the decision is recorded without a new run (PendingApproval.live).
 */
export function createEngineGate(options: EngineGateOptions): EngineGate {
  const holds = new Map<string, Hold>();
  const now = options.now ?? Date.now;
  return {
    judge: async (call) => {
      try {
        const held = holds.get(call.callId);
        if (held && held.approval.command !== call.command)
          return { decision: 'deny', reason: 'Patchbay gate: this call was held for another command' };
        if (held) return held.answer ?? (await awaitDecision(options, held, now));
        return await judgeNew(options, holds, call, now);
      } catch (error) {
        options.log.error({ err: error }, 'engine gate failed');
        return { decision: 'deny', reason: 'Patchbay gate: the command could not be judged, so it does not run' };
      }
    },
    close: async () => {
      for (const hold of holds.values())
        if (!hold.answer) await closeHold(options, hold, decided(hold, now, 'expired', 'the engine run ended first'));
    },
  };
}

async function judgeNew(
  options: EngineGateOptions,
  holds: Map<string, Hold>,
  call: EngineGateCall,
  now: () => number,
): Promise<EngineGateAnswer> {
  const ctx: ToolContext = {
    sandbox: options.sandbox as Sandbox,
    sessionId: options.sessionId,
    signal: options.signal,
    log: options.log,
    approvals: options.approvals,
  };
  const gate = await gateCommand(call.command, ctx, checkCommand, 'Command');
  if (gate.kind === 'run') return { decision: 'allow' };
  const control = gate.output.control;
  if (control?.kind !== 'approval') return { decision: 'deny', reason: gate.output.content };
  const hold: Hold = {
    approval: {
      requestId: `engine-${randomBytes(6).toString('hex')}`,
      command: control.command,
      classes: [...new Set(control.findings.map((f) => f.class))],
      reasons: control.findings.map((f) => f.reason),
      expiresAt: new Date(now() + options.approvalTimeoutMs).toISOString(),
      live: true,
    },
  };
  holds.set(call.callId, hold);
  await requestApproval(options, hold.approval);
  return awaitDecision(options, hold, now);
}

/** The approval request as Patchbay's loop records it (approvalRequestStep): the event and the session's open question. */
async function requestApproval(options: EngineGateOptions, approval: PendingApproval): Promise<void> {
  await options.runLog.commitStep(options.sessionId, approvalRequestStep(approval));
}

/**
 * Waits a while for the request's decision in the session's log: a person's (answerApproval writes
 * it), or the expiry, which this records. Undecided after `waitMs`: `pending`, and the hook asks again.
 */
async function awaitDecision(options: EngineGateOptions, hold: Hold, now: () => number): Promise<EngineGateAnswer> {
  const until = now() + (options.waitMs ?? 15_000);
  const { requestId } = hold.approval;
  for (;;) {
    const events = await options.runLog.events(options.sessionId, { types: ['approval-decided'] });
    const logged = events.find((e) => e.event.type === 'approval-decided' && e.event.requestId === requestId);
    if (logged) return closeHold(options, hold, logged.event as EventOf<'approval-decided'>, false);
    if (options.signal.aborted) return { decision: 'deny', reason: 'Patchbay gate: the session was stopped' };
    if (now() >= Date.parse(hold.approval.expiresAt))
      return closeHold(options, hold, decided(hold, now, 'expired', 'no one answered'));
    if (now() >= until) return { decision: 'pending' };
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 500));
  }
}

function decided(hold: Hold, now: () => number, decision: 'expired', reason: string): EventOf<'approval-decided'> {
  const at = new Date(now()).toISOString();
  return { type: 'approval-decided', requestId: hold.approval.requestId, decision, surface: 'system', reason, at };
}

/** Records the decision (unless a person's is already in the log), closes the session's open question, and answers the hook. */
async function closeHold(
  options: EngineGateOptions,
  hold: Hold,
  event: EventOf<'approval-decided'>,
  record = true,
): Promise<EngineGateAnswer> {
  await options.runLog.commitStep(options.sessionId, {
    events: record ? [{ event, dedupeKey: `approval-decided:${event.requestId}` }] : [],
    patch: { pendingQuestion: null },
  });
  hold.answer = answerFor(event, options.approvalTimeoutMs);
  return hold.answer;
}

function answerFor(event: EventOf<'approval-decided'>, timeoutMs: number): EngineGateAnswer {
  if (event.decision === 'approved') return { decision: 'allow' };
  if (event.decision === 'expired')
    return {
      decision: 'deny',
      reason: `Not approved: no one answered within ${Math.round(timeoutMs / 60_000)} minutes, so it counts as denied. The command did not run.`,
    };
  const who = event.actor?.name ?? 'a person';
  const why = event.reason ? `${who} denied it: ${event.reason}.` : `${who} denied it.`;
  return { decision: 'deny', reason: `Not approved: ${why} The command did not run.` };
}
