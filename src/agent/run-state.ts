import type { EventOf, StoredEvent } from '../core/events.ts';
import type { ModelMessage, ToolCall } from '../models/model-provider.ts';
import type { RunInput, RunLimits, RunnerLog } from './agent-runner.ts';
import { createLoopGuard, type LoopGuard } from './loop-guard.ts';
import type { ToolContext } from './tool.ts';
import { clip } from './transcript-text.ts';

/** A person's message event, as the runner reads it from the log. */
export type UserMessageEvent = StoredEvent & { event: EventOf<'user-message'> };

/**
 * What one run of the agent carries from step to step: its input, the transcript as the model
 * sees it, and the counters its safety limits are checked against. Every function of the loop
 * takes it explicitly; only `recordStep` and the counters' owners change it.
 */
export type RunState = {
  input: RunInput;
  limits: RunLimits;
  now: () => number;
  startedAt: number;
  guard: LoopGuard;
  ctx: ToolContext;
  /** The transcript, in step with the log. */
  messages: ModelMessage[];
  /** In step with `messages`: the user-message event each one consumed, kept through compaction. */
  seqs: (number | null)[];
  /** The last user-message event the transcript has taken in. */
  consumedSeq: number;
  /** The turn number the run starts from: turn numbers key events' dedupe. */
  firstTurn: number;
  toolCallCount: number;
  tokensUsed: number;
  costUsd: number;
  /** Whether the thread was told this run waits for the model service (it is told once). */
  modelWaitTold: boolean;
};

/** Reads the session's transcript and turn count from the log: where a new or resumed run starts. */
export async function openRunState(input: RunInput, limits: RunLimits): Promise<RunState> {
  const { sessionId, sandbox, runLog, signal, log } = input;
  const now = input.now ?? Date.now;
  const startedAt = now();
  const entries = await runLog.transcript(sessionId);
  const messages: ModelMessage[] = entries.map((e) => e.message);
  const seqs: (number | null)[] = entries.map((e) => e.eventSeq);
  // Compaction removes assistant messages, so count turns from the log's usage events too.
  const turnsInLog = (await runLog.events(sessionId, { types: ['usage'] })).map((e) =>
    e.event.type === 'usage' ? e.event.turn + 1 : 0,
  );
  return {
    input,
    limits,
    now,
    startedAt,
    guard: createLoopGuard({ maxRepeats: limits.maxRepeatedFailures }),
    ctx: {
      sandbox,
      sessionId,
      signal,
      log,
      // A quarter of the window at most (3 characters a token): a small local model's window is
      // read from its server on the first turn, so this is read at each call, not once.
      get maxOutputChars() {
        return Math.min(limits.maxToolOutputChars, Math.floor(input.model.contextWindow * 0.75));
      },
      ...(input.approvals && { approvals: input.approvals }),
    },
    messages,
    seqs,
    consumedSeq: Math.max(0, ...seqs.map((s) => s ?? 0)),
    firstTurn: Math.max(messages.filter((m) => m.role === 'assistant').length, ...turnsInLog),
    toolCallCount: 0,
    tokensUsed: 0,
    costUsd: 0,
    modelWaitTold: false,
  };
}

/** Writes one step to the log, then adds its messages to the transcript the model sees. */
export async function recordStep(run: RunState, step: Parameters<RunnerLog['commitStep']>[1]): Promise<void> {
  await run.input.runLog.commitStep(run.input.sessionId, step);
  for (const m of step.messages ?? []) {
    run.messages.push(m.message);
    run.seqs.push(m.eventSeq ?? null);
    if (m.eventSeq) run.consumedSeq = Math.max(run.consumedSeq, m.eventSeq);
  }
}

/** People's messages logged after `afterSeq`. */
export async function userMessagesAfter(run: RunState, afterSeq: number): Promise<UserMessageEvent[]> {
  return (await run.input.runLog.events(run.input.sessionId, {
    afterSeq,
    types: ['user-message'],
  })) as UserMessageEvent[];
}

/** People's messages the transcript has not taken in yet. */
export function unreadUserMessages(run: RunState): Promise<UserMessageEvent[]> {
  return userMessagesAfter(run, run.consumedSeq);
}

/** Whether the session was stopped: a stop writes 'cancelled' before it aborts the run. */
export async function isStopped(run: RunState): Promise<boolean> {
  return (await run.input.runLog.get(run.input.sessionId))?.status === 'cancelled';
}

/**
 * A call's result that the run writes itself, not the tool (a refusal, a decision, the children's
 * report): in the transcript and as the call's tool-end event, in one step.
 */
export async function recordCallResult(
  run: RunState,
  call: ToolCall,
  content: string,
  isError: boolean,
): Promise<void> {
  await recordStep(run, {
    messages: [{ message: { role: 'tool', toolCallId: call.id, name: call.name, content, isError } }],
    events: [
      {
        event: {
          type: 'tool-end',
          callId: call.id,
          name: call.name,
          isError,
          output: clip(content, 4000),
          durationMs: 0,
        },
        dedupeKey: `tool-end:${call.id}`,
      },
    ],
  });
}
