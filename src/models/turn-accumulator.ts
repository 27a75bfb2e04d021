import type { StopReason, ToolCall, TurnError, TurnResult, Usage } from './model-provider.ts';
import { zeroUsage } from './model-provider.ts';

/**
 * Merges one streamed turn, whatever the vendor: text deltas are forwarded as they arrive and
 * concatenated; tool calls are assembled from argument fragments keyed by the vendor's block or
 * item key, then parsed and validated as a JSON object when the turn ends.
 */
export type TurnAccumulator = {
  text(delta: string): void;
  startToolCall(key: string | number, id: string, name: string): void;
  appendToolArguments(key: string | number, fragment: string): void;
  /** Replaces the assembled arguments with the vendor's final full string, when it sends one. */
  setToolArguments(key: string | number, full: string): void;
  hasToolCalls(): boolean;
  content(): string | undefined;
  /** Finished tool calls, or an error naming the first call whose arguments are not a JSON object. */
  toolCalls(): { ok: true; calls: ToolCall[] } | { ok: false; error: TurnError };
};

type Pending = { id: string; name: string; args: string };

export function createTurnAccumulator(onDelta?: (text: string) => void): TurnAccumulator {
  let text = '';
  const pending = new Map<string | number, Pending>();
  return {
    text(delta) {
      if (!delta) return;
      text += delta;
      onDelta?.(delta);
    },
    startToolCall(key, id, name) {
      pending.set(key, { id, name, args: '' });
    },
    appendToolArguments(key, fragment) {
      const call = pending.get(key);
      if (call) call.args += fragment;
    },
    setToolArguments(key, full) {
      const call = pending.get(key);
      if (call) call.args = full;
    },
    hasToolCalls: () => pending.size > 0,
    content: () => (text.length > 0 ? text : undefined),
    toolCalls() {
      const calls: ToolCall[] = [];
      for (const call of pending.values()) {
        const parsed = parseToolArguments(call.args);
        if (!parsed.ok) {
          return {
            ok: false,
            error: {
              code: 'model_bad_response',
              message: `The model sent malformed JSON arguments for tool "${call.name}" (${parsed.reason}); the turn can be retried`,
              retryable: true,
            },
          };
        }
        calls.push({ id: call.id, name: call.name, input: parsed.value });
      }
      return { ok: true, calls };
    },
  };
}

/** Empty arguments mean "no arguments" (Anthropic streams `""` for a tool without input). */
export function parseToolArguments(
  raw: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; reason: string } {
  if (raw.trim() === '') return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: 'arguments are not a JSON object' };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** Builds the final result once the stream has ended normally. */
export function finishTurn(
  acc: TurnAccumulator,
  stopReason: StopReason,
  usage: Usage,
  providerState?: unknown,
): TurnResult {
  const tools = acc.toolCalls();
  if (!tools.ok) return { content: acc.content(), toolCalls: [], stopReason: 'error', usage, error: tools.error };
  const result: TurnResult = { content: acc.content(), toolCalls: tools.calls, stopReason, usage };
  if (providerState !== undefined) result.providerState = providerState;
  return result;
}

export function abortedTurn(acc: TurnAccumulator | undefined, usage: Usage = { ...zeroUsage }): TurnResult {
  return { content: acc?.content(), toolCalls: [], stopReason: 'aborted', usage };
}

export function errorTurn(error: TurnError, acc?: TurnAccumulator, usage: Usage = { ...zeroUsage }): TurnResult {
  return { content: acc?.content(), toolCalls: [], stopReason: 'error', usage, error };
}
