import { turnCostUsd, usageCost } from '../models/model-catalog.ts';
import { isServiceFault } from '../models/retry-policy.ts';
import type {
  ModelMessage,
  ModelProvider,
  RetryNotice,
  ToolSpec,
  TurnError,
  TurnResult,
  Usage,
} from '../models/model-provider.ts';
import type { RunOutcome } from './agent-runner.ts';
import { compactEntries } from './context-compaction.ts';
import { recordStep, type RunState, userMessagesAfter } from './run-state.ts';
import { clip, quoteMessage } from './transcript-text.ts';

/**
 * Below this window the process and browser tools are left out of what the model is offered:
 * their specs alone take about 2,000 tokens, a page snapshot many more, and an 8k model server
 * would otherwise refuse the prompt before the task has begun. Known from the model's limits (the
 * window a server states, or the smaller one a refusal names), so a turn after either is lean.
 */
const LEAN_WINDOW = 32_000;

/** The tool specs offered to `model`: all of them, or without the process and browser tools on a small window. */
function specsForWindow(specs: ToolSpec[], model: Pick<ModelProvider, 'contextWindow'>): ToolSpec[] {
  return model.contextWindow >= LEAN_WINDOW ? specs : specs.filter((s) => !/^(process|browser)_/.test(s.name));
}

/** Adds a model call's tokens and list-price cost to the run's counters. */
function countUsage(run: RunState, usage: Usage): number {
  const spent = usage.inputTokens + usage.outputTokens + usage.cacheReadTokens + usage.cacheWriteTokens;
  run.tokensUsed += spent;
  run.costUsd += turnCostUsd(run.input.model, usage);
  return spent;
}

/**
 * Before a model turn: when the transcript nears the window, older turns become one summary turn.
 * Transcript, context-compacted event and the summary call's usage land in one transaction, so a
 * crash leaves either the old transcript or the new one. Returns false if the run was stopped.
 */
export async function compactTranscript(
  run: RunState,
  turn: number,
  options: { force?: boolean } = {},
): Promise<boolean> {
  const { model, tools, signal, log, runLog, sessionId } = run.input;
  const compaction = await compactEntries({
    entries: run.messages.map((message, i) => ({ message, eventSeq: run.seqs[i] ?? null })),
    model,
    system: run.input.system,
    tools: specsForWindow(tools.specs(), model),
    maxOutputTokens: run.limits.maxOutputTokens,
    // Forced: the server refused the prompt as too long, whatever the estimate said.
    threshold: options.force ? 0 : run.limits.compactAt,
    peopleUpTo: async (seq) => (await userMessagesAfter(run, 0)).filter((e) => e.seq <= seq),
    quote: quoteMessage,
    signal,
    log,
  });
  if (signal.aborted) return false;
  if (!compaction) return true;
  const { usage } = compaction;
  const spent = countUsage(run, usage);
  await runLog.replaceTranscript(
    sessionId,
    compaction.entries,
    [
      { event: { type: 'context-compacted', summary: compaction.summary, messagesReplaced: compaction.replaced } },
      ...(spent > 0
        ? [{ event: { type: 'usage' as const, turn, model: model.model, ...usage, ...usageCost(model, usage) } }]
        : []),
    ],
    usage,
  );
  run.messages.splice(0, run.messages.length, ...compaction.entries.map((e) => e.message));
  run.seqs.splice(0, run.seqs.length, ...compaction.entries.map((e) => e.eventSeq));
  log.info(
    { replaced: compaction.replaced, kept: run.messages.length - 1, modelSummary: compaction.modelSummary },
    'context compacted',
  );
  return true;
}

/**
 * One model call, streamed, on a snapshot of the transcript; its reply and usage are recorded as
 * one step. Returns the outcome instead when the call was aborted or failed.
 */
export async function takeModelTurn(
  run: RunState,
  turn: number,
): Promise<{ result: TurnResult } | { outcome: RunOutcome; error?: TurnError }> {
  const { model, tools, signal, onDelta } = run.input;
  const result = await model.runTurn({
    system: run.input.system,
    // A snapshot: the transcript keeps growing after the call, and the provider may hold on to it.
    messages: [...run.messages],
    tools: specsForWindow(tools.specs(), model),
    maxTokens: run.limits.maxOutputTokens,
    signal,
    ...(onDelta && { onDelta: (text: string) => onDelta(text, turn) }),
    // Retries never wait past the run's time budget.
    retryWithinMs: Math.max(0, run.limits.maxWallMs - (run.now() - run.startedAt)),
    onRetry: (notice: RetryNotice) => tellModelWait(run, turn, notice),
  });
  if (result.stopReason === 'aborted' || signal.aborted) return { outcome: { kind: 'cancelled' } };
  if (result.stopReason === 'error') {
    const { error } = result;
    return {
      outcome: {
        kind: 'failed',
        code: error?.code ?? 'model_error',
        message: error?.message ?? 'the model call failed',
        ...(error && isServiceFault(error) && { modelDown: true }),
      },
      ...(error && { error }),
    };
  }
  countUsage(run, result.usage);
  const assistant: ModelMessage = {
    role: 'assistant',
    ...(result.content && { content: result.content }),
    ...(result.toolCalls.length > 0 && { toolCalls: result.toolCalls }),
    ...(result.providerState !== undefined && { providerState: result.providerState }),
  };
  await recordStep(run, {
    messages: [{ message: assistant }],
    events: [
      ...(result.content
        ? [{ event: { type: 'assistant-message' as const, text: result.content, turn }, dedupeKey: `turn:${turn}` }]
        : []),
      {
        event: { type: 'usage', turn, model: model.model, ...result.usage, ...usageCost(model, result.usage) },
        dedupeKey: `usage:${turn}`,
      },
    ],
    usage: result.usage,
  });
  return { result };
}

/**
 * The model call is about to wait for a retry: the thread hears it, once per run (later waits
 * of the same run are only logged by the retry loop). The event's dedupe key is the turn's, so a
 * resumed run that repeats this turn writes no second copy.
 */
async function tellModelWait(run: RunState, turn: number, notice: RetryNotice): Promise<void> {
  if (run.modelWaitTold) return;
  run.modelWaitTold = true;
  const { code, message } = notice.error;
  await recordStep(run, {
    events: [
      {
        event: { type: 'model-waiting', code, message, retryInMs: Math.round(notice.delayMs) },
        dedupeKey: `model-waiting:${turn}`,
      },
    ],
  });
}

/**
 * A turn without tool calls: the model finished, declined, or was cut off (then it is asked to
 * go on, and undefined says the next turn may start).
 */
export async function endTextOnlyTurn(run: RunState, result: TurnResult): Promise<RunOutcome | undefined> {
  switch (result.stopReason) {
    case 'max_tokens':
      await recordStep(run, {
        messages: [
          {
            message: {
              role: 'user',
              content: 'Your reply was cut off at the output limit. Continue where you stopped.',
            },
          },
        ],
      });
      return undefined;
    case 'pause_turn':
      await recordStep(run, { messages: [{ message: { role: 'user', content: 'Continue.' } }] });
      return undefined;
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
