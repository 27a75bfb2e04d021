import type { PendingQuestion } from '../core/session-record.ts';
import type { ToolCall } from '../models/model-provider.ts';
import type { RunOutcome } from './agent-runner.ts';
import { attachedImages } from './message-images.ts';
import { requestApproval, resumeApproval } from './approval-calls.ts';
import { resumeSpawn, spawnSubtasks } from './subtask-calls.ts';
import { isStopped, recordCallResult, recordStep, type RunState, unreadUserMessages } from './run-state.ts';
import { type ToolContext, toolResultMessage, type ToolOutput } from './tool.ts';
import { clip, quoteMessage, unresolvedCalls } from './transcript-text.ts';

/**
 * Runs one call and records its start and its result, each as its own step. A run interrupted
 * (not stopped) mid-call leaves the call without a result, so the resumed run executes it again
 * from the start instead of handing the model a half-run command. A call held for approval is
 * left without a result too: the decision completes it. `ctx` stands in for the run's own (an approved command's).
 */
export async function executeCall(run: RunState, call: ToolCall, ctx: ToolContext = run.ctx): Promise<ToolOutput> {
  const { tools, signal } = run.input;
  await recordStep(run, {
    events: [
      {
        event: { type: 'tool-start', callId: call.id, name: call.name, input: call.input },
        dedupeKey: `tool-start:${call.id}`,
      },
    ],
  });
  const started = run.now();
  // Already within limits.maxToolOutputChars: the registry cut it, once, if it had to.
  const output = await tools.execute(call, ctx);
  if (output.control?.kind === 'approval') return output;
  if (signal.aborted && !(await isStopped(run))) return output;
  run.toolCallCount += 1;
  const isError = output.isError ?? false;
  await recordStep(run, {
    // The result and the checkpoint of the work after it land together, or neither does.
    ...(output.checkpoint && { checkpoint: output.checkpoint }),
    messages: [{ message: toolResultMessage(call, output) }],
    events: [
      {
        event: {
          type: 'tool-end',
          callId: call.id,
          name: call.name,
          isError,
          output: clip(output.content, 4000),
          durationMs: run.now() - started,
        },
        dedupeKey: `tool-end:${call.id}`,
      },
    ],
  });
  return output;
}

/** Records an ask_user call's question; undefined when the call is not a valid question. */
export async function askUser(run: RunState, call: ToolCall): Promise<PendingQuestion | undefined> {
  const output = await run.input.tools.execute(call, run.ctx);
  if (output.control?.kind !== 'ask') return undefined;
  const question: PendingQuestion = {
    questionId: call.id,
    toolCallId: call.id,
    question: output.control.question,
    ...(output.control.choices && { choices: output.control.choices }),
    ...(output.control.recommended && { recommended: output.control.recommended }),
  };
  const { questionId, toolCallId: _, ...asked } = question;
  await recordStep(run, {
    events: [{ event: { type: 'question-asked', questionId, ...asked }, dedupeKey: `question:${call.id}` }],
    patch: { pendingQuestion: question },
  });
  return question;
}

/**
 * The calls of one model turn, in order. Stops the run when it is aborted, its sandbox is lost
 * or the loop guard sees the same failure repeating; waits when the model asked a question or
 * started sub-tasks (after the turn's other calls). Undefined: the next turn may start.
 */
export async function executeToolCalls(run: RunState, calls: readonly ToolCall[]): Promise<RunOutcome | undefined> {
  let question: PendingQuestion | undefined;
  let spawned: string | undefined;
  for (const call of calls) {
    if (call.name === 'spawn_subtasks') {
      if (await spawnSubtasks(run, call)) spawned = call.id;
      continue;
    }
    if (call.name === 'ask_user') {
      const asked = await askUser(run, call);
      if (asked) {
        question = asked;
        continue;
      }
    }
    const output = await executeCall(run, call);
    if (output.control?.kind === 'approval')
      return { kind: 'waiting', question: await requestApproval(run, call, output.control) };
    if (run.input.signal.aborted) return { kind: 'cancelled' };
    // A remote sandbox that died ends the run with its reason; a message resumes the session.
    const lost = run.input.sandbox.failure?.();
    if (lost) return { kind: 'failed', code: 'sandbox_failed', message: lost.message };
    const verdict = run.guard.record({
      name: call.name,
      input: call.input,
      isError: output.isError ?? false,
      output: output.content,
    });
    if (verdict.stop) return { kind: 'failed', code: 'loop_guard', message: verdict.reason };
  }
  if (question) return { kind: 'waiting', question };
  return spawned ? { kind: 'subtasks', callId: spawned } : undefined;
}

/**
 * A resumed run: the calls of the last turn that have no result yet are answered (a question),
 * run again, or reported as interrupted. Undefined: the run goes on to its next turn.
 */
export async function resumeUnresolvedCalls(run: RunState): Promise<RunOutcome | undefined> {
  const { tools } = run.input;
  for (const call of unresolvedCalls(run.messages)) {
    const pending = (await run.input.runLog.get(run.input.sessionId))?.pendingQuestion;
    if (pending?.approval?.requestId === call.id) {
      const approval = pending.approval;
      const runApproved = (command: string) =>
        executeCall(run, call, {
          ...run.ctx,
          approvals: { rules: [], ...run.ctx.approvals, approvedCommand: command },
        });
      const waiting = await resumeApproval(run, call, { ...pending, approval }, runApproved);
      if (waiting) return waiting;
    } else if (call.name === 'ask_user') {
      const waiting = await resumeQuestion(run, call);
      if (waiting) return waiting;
    } else if (call.name === 'spawn_subtasks') {
      const waiting = await resumeSpawn(run, call);
      if (waiting) return waiting;
    } else if (tools.rerunsInterrupted && !tools.rerunsInterrupted(call) && (await startedBefore(run, call))) {
      await reportInterrupted(run, call);
    } else {
      const output = await executeCall(run, call);
      if (output.control?.kind === 'approval')
        return { kind: 'waiting', question: await requestApproval(run, call, output.control) };
    }
  }
  return undefined;
}

/** An ask_user call without a result: its answers, if people gave any; else the question, asked now if need be. */
async function resumeQuestion(run: RunState, call: ToolCall): Promise<RunOutcome | undefined> {
  const answers = await unreadUserMessages(run);
  const question = (await run.input.runLog.get(run.input.sessionId))?.pendingQuestion;
  if (answers.length === 0) {
    if (question) return { kind: 'waiting', question };
    // Killed after the model's turn was recorded but before its question was: ask it now.
    const asked = await askUser(run, call);
    if (asked) return { kind: 'waiting', question: asked };
    await executeCall(run, call);
    return undefined;
  }
  const { images, note } = await attachedImages(run.input.artifacts, answers);
  const text = [...answers.map(quoteMessage), ...(note ? [note] : [])].join('\n\n');
  await recordStep(run, {
    messages: [
      {
        message: { role: 'tool', toolCallId: call.id, name: call.name, content: text, isError: false, images },
        eventSeq: answers.at(-1)!.seq,
      },
    ],
    events: answers.map((a) => ({
      event: {
        type: 'question-answered' as const,
        questionId: question?.questionId ?? call.id,
        actor: a.event.actor,
        text: a.event.text,
      },
      dedupeKey: `answer:${a.seq}`,
    })),
    patch: { pendingQuestion: null },
  });
  return undefined;
}

async function startedBefore(run: RunState, call: ToolCall): Promise<boolean> {
  return (await run.input.runLog.events(run.input.sessionId, { types: ['tool-start'] })).some(
    (e) => e.event.type === 'tool-start' && e.event.callId === call.id,
  );
}

/** A call that may have been applied in part, in a workspace that could not be put back: the model decides. */
async function reportInterrupted(run: RunState, call: ToolCall): Promise<void> {
  const content = `This call was interrupted: the worker running it stopped before it finished, and the workspace could not be put back to where it was before the call, so it may hold part of the call's effect. It was not run again. Check the workspace before you repeat it.`;
  run.input.log.warn(
    { callId: call.id, name: call.name },
    'a call interrupted by the previous run is reported to the model instead of run again',
  );
  await recordCallResult(run, call, content, true);
}
