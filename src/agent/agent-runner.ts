import type { Logger } from 'pino';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { Actor } from '../core/actor.ts';
import { describeError } from '../core/errors.ts';
import type { EventOf, StoredEvent } from '../core/events.ts';
import { budgetCostUsd } from '../models/model-catalog.ts';
import type { ModelMessage, ModelProvider, ToolCall, ToolSpec } from '../models/model-provider.ts';
import type { RunLog } from '../core/run-log.ts';
import type { PendingQuestion } from '../core/session-record.ts';
import { compactEntries } from './context-compaction.ts';
import { createLoopGuard } from './loop-guard.ts';
import { toolResultMessage, type ToolContext, type ToolOutput } from './tool.ts';

/** The part of the run log the runner reads and writes: every step lands there before the next starts. */
export type RunnerLog = Pick<RunLog, 'get' | 'transcript' | 'events' | 'commitStep' | 'replaceTranscript'>;

export type ToolExecutor = {
  specs(): ToolSpec[];
  /** Must not throw: failures come back as error results. */
  execute(call: ToolCall, ctx: ToolContext): Promise<ToolOutput>;
  /**
   * Whether a call that an earlier run started (its tool-start is in the log) and left without a
   * result may run again: it changes nothing, or the workspace was put back to where it was before
   * the call. When false, the call is reported to the model as interrupted instead, never applied
   * twice. Absent: such calls run again.
   */
  rerunsInterrupted?(call: ToolCall): boolean;
};

/** Safety limits for one run. They stop a runaway run; they are not how a run normally ends. */
export type RunLimits = {
  maxWallMs: number;
  maxTokens: number;
  maxToolCalls: number;
  maxOutputTokens: number;
  maxRepeatedFailures: number;
  /**
   * Tool output longer than this is cut (head and tail kept, with a note saying what was cut and
   * how to see more) before it joins the transcript. The tool registry has its own, higher cap
   * (about 32k); keep this one below it so this is the limit that applies.
   */
  maxToolOutputChars: number;
  /** Compact older turns into a summary once the transcript uses this share of the model's window. */
  compactAt: number;
  /** US dollars this run may spend at list prices (models without a known price count as free). */
  maxCostUsd: number;
};

export const defaultRunLimits: RunLimits = {
  maxWallMs: 60 * 60_000,
  maxTokens: 5_000_000,
  maxToolCalls: 500,
  maxOutputTokens: 16_000,
  maxRepeatedFailures: 3,
  maxToolOutputChars: 30_000,
  compactAt: 0.75,
  maxCostUsd: Number.POSITIVE_INFINITY,
};

export type RunOutcome =
  | { kind: 'finished'; summary: string }
  | { kind: 'waiting'; question: PendingQuestion }
  | { kind: 'cancelled' }
  | { kind: 'failed'; code: string; message: string; budget?: { kind: 'cost' | 'time'; spent: number; limit: number } };

export type RunInput = {
  sessionId: string;
  system: string;
  model: ModelProvider;
  tools: ToolExecutor;
  sandbox: Sandbox;
  /** The sink the runner writes each step to (the session store in production). */
  runLog: RunnerLog;
  signal: AbortSignal;
  log: Logger;
  limits?: Partial<RunLimits>;
  now?: () => number;
  /** The model's text as it streams, with the turn it belongs to. Must not throw. */
  onDelta?: (text: string, turn: number) => void;
};

/**
 * The agent loop: model turn, then its tool calls (several per turn), results back, next turn.
 * Every step is written to the session's transcript and event log before the next one starts, so
 * a run killed at any point resumes from the database: calls without results are executed again
 * (or reported as interrupted when the tools cannot vouch for the workspace, see
 * ToolExecutor.rerunsInterrupted), and events carry dedupe keys so a replayed step writes no second copy.
 *
 * Stops on conditions: the model ends its turn, asks a question (waiting), the session is stopped,
 * a safety limit is reached, the loop guard sees the same failure repeating, or the model fails.
 */
export async function runAgent(input: RunInput): Promise<RunOutcome> {
  const { sessionId, model, tools, sandbox, runLog, signal, log } = input;
  const limits = { ...defaultRunLimits, ...input.limits };
  const now = input.now ?? Date.now;
  const startedAt = now();
  const guard = createLoopGuard({ maxRepeats: limits.maxRepeatedFailures });
  const ctx: ToolContext = { sandbox, sessionId, signal, log, maxOutputChars: limits.maxToolOutputChars };
  let toolCallCount = 0;
  let tokensUsed = 0;
  let costUsd = 0;

  const entries = await runLog.transcript(sessionId);
  const messages: ModelMessage[] = entries.map((e) => e.message);
  // In step with `messages`: the user-message event each one consumed, kept through compaction.
  const seqs: (number | null)[] = entries.map((e) => e.eventSeq);
  let consumedSeq = Math.max(0, ...seqs.map((s) => s ?? 0));
  // Turn numbers key events' dedupe; compaction removes assistant messages, so count from the log.
  const turnsInLog = (await runLog.events(sessionId, { types: ['usage'] })).map((e) =>
    e.event.type === 'usage' ? e.event.turn + 1 : 0,
  );
  const firstTurn = Math.max(messages.filter((m) => m.role === 'assistant').length, ...turnsInLog);

  const newUserMessagesAfter = async (afterSeq: number) =>
    (await runLog.events(sessionId, { afterSeq, types: ['user-message'] })) as (StoredEvent & {
      event: EventOf<'user-message'>;
    })[];
  const newUserMessages = () => newUserMessagesAfter(consumedSeq);

  const record = async (step: Parameters<RunnerLog['commitStep']>[1]) => {
    await runLog.commitStep(sessionId, step);
    for (const m of step.messages ?? []) {
      messages.push(m.message);
      seqs.push(m.eventSeq ?? null);
      if (m.eventSeq) consumedSeq = Math.max(consumedSeq, m.eventSeq);
    }
  };

  const executeCall = async (call: ToolCall): Promise<ToolOutput> => {
    await record({
      events: [
        {
          event: { type: 'tool-start', callId: call.id, name: call.name, input: call.input },
          dedupeKey: `tool-start:${call.id}`,
        },
      ],
    });
    const started = now();
    const raw = await tools.execute(call, ctx);
    // Interrupted (not stopped): leave the call without a result, so the resumed run executes it
    // again from the start instead of handing the model a half-run command.
    if (signal.aborted && (await runLog.get(sessionId))?.status !== 'cancelled') return raw;
    // Already within limits.maxToolOutputChars: the registry cut it, once, if it had to.
    const output = raw;
    toolCallCount += 1;
    await record({
      // The result and the checkpoint of the work after it land together, or neither does.
      ...(output.checkpoint && { checkpoint: output.checkpoint }),
      messages: [
        {
          message: toolResultMessage(call, output),
        },
      ],
      events: [
        {
          event: {
            type: 'tool-end',
            callId: call.id,
            name: call.name,
            isError: output.isError ?? false,
            output: clip(output.content, 4000),
            durationMs: now() - started,
          },
          dedupeKey: `tool-end:${call.id}`,
        },
      ],
    });
    return output;
  };

  const startedBefore = async (call: ToolCall) =>
    (await runLog.events(sessionId, { types: ['tool-start'] })).some(
      (e) => e.event.type === 'tool-start' && e.event.callId === call.id,
    );

  /** A call that may have been applied in part, in a workspace that could not be put back: the model decides. */
  const reportInterrupted = async (call: ToolCall) => {
    const content = `This call was interrupted: the worker running it stopped before it finished, and the workspace could not be put back to where it was before the call, so it may hold part of the call's effect. It was not run again. Check the workspace before you repeat it.`;
    log.warn(
      { callId: call.id, name: call.name },
      'a call interrupted by the previous run is reported to the model instead of run again',
    );
    await record({
      messages: [{ message: { role: 'tool', toolCallId: call.id, name: call.name, content, isError: true } }],
      events: [
        {
          event: { type: 'tool-end', callId: call.id, name: call.name, isError: true, output: content, durationMs: 0 },
          dedupeKey: `tool-end:${call.id}`,
        },
      ],
    });
  };

  /** Records an ask_user call's question; undefined when the call is not a valid question. */
  const ask = async (call: ToolCall): Promise<PendingQuestion | undefined> => {
    const output = await tools.execute(call, ctx);
    if (output.control?.kind !== 'ask') return undefined;
    const question: PendingQuestion = {
      questionId: call.id,
      toolCallId: call.id,
      question: output.control.question,
      ...(output.control.choices && { choices: output.control.choices }),
      ...(output.control.recommended && { recommended: output.control.recommended }),
    };
    const { questionId, toolCallId: _, ...asked } = question;
    await record({
      events: [{ event: { type: 'question-asked', questionId, ...asked }, dedupeKey: `question:${call.id}` }],
      patch: { pendingQuestion: question },
    });
    return question;
  };

  /**
   * Before a model turn: when the transcript nears the window, older turns become one summary turn.
   * Transcript, context-compacted event and the summary call's usage land in one transaction, so a
   * crash leaves either the old transcript or the new one. Returns false if the run was stopped.
   */
  const compact = async (turn: number): Promise<boolean> => {
    const compaction = await compactEntries({
      entries: messages.map((message, i) => ({ message, eventSeq: seqs[i] ?? null })),
      model,
      system: input.system,
      tools: tools.specs(),
      maxOutputTokens: limits.maxOutputTokens,
      threshold: limits.compactAt,
      peopleUpTo: async (seq) => (await newUserMessagesAfter(0)).filter((e) => e.seq <= seq),
      quote: (e) => quote(e.event.actor, e.at, e.event.text),
      signal,
      log,
    });
    if (signal.aborted) return false;
    if (!compaction) return true;
    const { usage } = compaction;
    const spent = usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
    tokensUsed += spent;
    costUsd += budgetCostUsd(model.model, usage);
    await runLog.replaceTranscript(
      sessionId,
      compaction.entries,
      [
        { event: { type: 'context-compacted', summary: compaction.summary, messagesReplaced: compaction.replaced } },
        ...(spent > 0 ? [{ event: { type: 'usage' as const, turn, model: model.model, ...usage } }] : []),
      ],
      usage,
    );
    messages.splice(0, messages.length, ...compaction.entries.map((e) => e.message));
    seqs.splice(0, seqs.length, ...compaction.entries.map((e) => e.eventSeq));
    log.info(
      { replaced: compaction.replaced, kept: messages.length - 1, modelSummary: compaction.modelSummary },
      'context compacted',
    );
    return true;
  };

  try {
    // A resumed run: calls of the last turn that have no result yet.
    for (const call of unresolvedCalls(messages)) {
      if (call.name === 'ask_user') {
        const answers = await newUserMessages();
        const session = await runLog.get(sessionId);
        const question = session?.pendingQuestion;
        if (answers.length === 0) {
          if (question) return { kind: 'waiting', question };
          // Killed after the model's turn was recorded but before its question was: ask it now.
          const asked = await ask(call);
          if (asked) return { kind: 'waiting', question: asked };
          await executeCall(call);
          continue;
        }
        const text = answers.map((a) => quote(a.event.actor, a.at, a.event.text)).join('\n\n');
        await record({
          messages: [
            {
              message: { role: 'tool', toolCallId: call.id, name: call.name, content: text, isError: false },
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
      } else if (tools.rerunsInterrupted && !tools.rerunsInterrupted(call) && (await startedBefore(call))) {
        await reportInterrupted(call);
      } else {
        await executeCall(call);
      }
    }

    for (let turn = firstTurn; ; turn++) {
      if (signal.aborted || (await runLog.get(sessionId))?.status === 'cancelled') return { kind: 'cancelled' };

      const inbox = await newUserMessages();
      if (inbox.length > 0) {
        await record({
          messages: inbox.map((e) => ({
            message: {
              role: 'user' as const,
              content:
                messages.length === 0 && e === inbox[0] ? taskMessage(e) : quote(e.event.actor, e.at, e.event.text),
            },
            eventSeq: e.seq,
          })),
        });
      }
      const last = messages.at(-1);
      if (!last) return { kind: 'failed', code: 'internal', message: 'the session has no task to work on' };
      if (last.role === 'assistant') return { kind: 'finished', summary: last.content ?? '' };

      const elapsed = now() - startedAt;
      if (elapsed > limits.maxWallMs) {
        return {
          ...budget(`the run reached its time limit of ${Math.round(limits.maxWallMs / 60_000)} minutes`),
          budget: { kind: 'time', spent: elapsed / 60_000, limit: limits.maxWallMs / 60_000 },
        };
      }
      if (costUsd >= limits.maxCostUsd) {
        return {
          ...budget(`the run spent $${costUsd.toFixed(2)} of its $${limits.maxCostUsd.toFixed(2)} budget`),
          budget: { kind: 'cost', spent: costUsd, limit: limits.maxCostUsd },
        };
      }
      if (tokensUsed > limits.maxTokens)
        return budget(`the run used ${tokensUsed} tokens, over its limit of ${limits.maxTokens}`);
      if (toolCallCount >= limits.maxToolCalls) return budget(`the run made ${toolCallCount} tool calls, its limit`);

      if (!(await compact(turn))) return { kind: 'cancelled' };

      const result = await model.runTurn({
        system: input.system,
        // A snapshot: the transcript keeps growing after the call, and the provider may hold on to it.
        messages: [...messages],
        tools: tools.specs(),
        maxTokens: limits.maxOutputTokens,
        signal,
        ...(input.onDelta && { onDelta: (text: string) => input.onDelta?.(text, turn) }),
      });
      if (result.stopReason === 'aborted' || signal.aborted) return { kind: 'cancelled' };
      if (result.stopReason === 'error') {
        return {
          kind: 'failed',
          code: result.error?.code ?? 'model_error',
          message: result.error?.message ?? 'the model call failed',
        };
      }
      tokensUsed +=
        result.usage.inputTokens +
        result.usage.outputTokens +
        result.usage.cacheReadTokens +
        result.usage.cacheWriteTokens;
      costUsd += budgetCostUsd(model.model, result.usage);

      const assistant: ModelMessage = {
        role: 'assistant',
        ...(result.content && { content: result.content }),
        ...(result.toolCalls.length > 0 && { toolCalls: result.toolCalls }),
        ...(result.providerState !== undefined && { providerState: result.providerState }),
      };
      await record({
        messages: [{ message: assistant }],
        events: [
          ...(result.content
            ? [{ event: { type: 'assistant-message' as const, text: result.content, turn }, dedupeKey: `turn:${turn}` }]
            : []),
          { event: { type: 'usage', turn, model: model.model, ...result.usage }, dedupeKey: `usage:${turn}` },
        ],
        usage: result.usage,
      });

      if (result.toolCalls.length === 0) {
        switch (result.stopReason) {
          case 'max_tokens':
            await record({
              messages: [
                {
                  message: {
                    role: 'user',
                    content: 'Your reply was cut off at the output limit. Continue where you stopped.',
                  },
                },
              ],
            });
            continue;
          case 'pause_turn':
            await record({ messages: [{ message: { role: 'user', content: 'Continue.' } }] });
            continue;
          case 'refusal':
            return {
              kind: 'failed',
              code: 'model_error',
              message: `the model declined the task${result.content ? `: ${clip(result.content, 300)}` : ''}`,
            };
          default:
            return { kind: 'finished', summary: result.content ?? '' };
        }
      }

      let question: PendingQuestion | undefined;
      for (const call of result.toolCalls) {
        if (call.name === 'ask_user') {
          const asked = await ask(call);
          if (asked) {
            question = asked;
            continue;
          }
        }
        const output = await executeCall(call);
        if (signal.aborted) return { kind: 'cancelled' };
        // A remote sandbox that died ends the run with its reason; a message resumes the session.
        const lost = sandbox.failure?.();
        if (lost) return { kind: 'failed', code: 'sandbox_failed', message: lost.message };
        const verdict = guard.record({
          name: call.name,
          input: call.input,
          isError: output.isError ?? false,
          output: output.content,
        });
        if (verdict.stop) return { kind: 'failed', code: 'loop_guard', message: verdict.reason };
      }
      if (question) return { kind: 'waiting', question };
    }
  } catch (error) {
    if (signal.aborted) return { kind: 'cancelled' };
    log.error({ err: error }, 'agent run failed');
    return { kind: 'failed', code: 'internal', message: describeError(error) };
  }
}

function budget(message: string): Extract<RunOutcome, { kind: 'failed' }> {
  return { kind: 'failed', code: 'budget_exhausted', message };
}

/** Calls of the last assistant turn that have no tool result after it. */
export function unresolvedCalls(messages: readonly ModelMessage[]): ToolCall[] {
  const lastAssistant = messages.findLastIndex((m) => m.role === 'assistant');
  if (lastAssistant < 0) return [];
  const assistant = messages[lastAssistant]!;
  if (assistant.role !== 'assistant' || !assistant.toolCalls?.length) return [];
  const answered = new Set(messages.slice(lastAssistant + 1).flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  return assistant.toolCalls.filter((c) => !answered.has(c.id));
}

/** People's words reach the model quoted, with author and time: user content, not instructions. */
export function quote(actor: Actor, at: string, text: string): string {
  const who = actor.email ? `${actor.name} <${actor.email}>` : actor.name;
  const body = text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
  return `Message from ${who} via ${actor.source} at ${at}:\n${body}`;
}

function taskMessage(e: StoredEvent & { event: EventOf<'user-message'> }): string {
  return `New task.\n\n${quote(e.event.actor, e.at, e.event.text)}`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[... ${text.length - max} more characters]`;
}
