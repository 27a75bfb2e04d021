import type { ErrorCode } from '../core/errors.ts';

/**
 * The provider-neutral transcript. Adapters translate it to their vendor's format and back.
 * Tool results follow the assistant message that made the calls, one message per call, in order.
 */
export type ToolCall = { id: string; name: string; input: unknown };

export type ModelMessage =
  | { role: 'user'; content: string }
  | {
      role: 'assistant';
      content?: string;
      toolCalls?: ToolCall[];
      /**
       * Opaque data the provider needs back on the next turn (for example OpenAI reasoning items).
       * Only the provider that wrote it reads it; others ignore it.
       */
      providerState?: unknown;
    }
  | { role: 'tool'; toolCallId: string; name: string; content: string; isError: boolean };

/** A tool as the model sees it: JSON Schema for its input. */
export type ToolSpec = { name: string; description: string; inputSchema: Record<string, unknown> };

export type StopReason =
  | 'end_turn' // the model is done
  | 'tool_use' // the model wants tool results
  | 'max_tokens' // output limit hit mid-answer
  | 'pause_turn' // the provider paused a long turn; send the transcript back to continue
  | 'refusal' // the model declined
  | 'error' // the turn failed; see `error`
  | 'aborted'; // the signal fired

export type Usage = {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's prompt cache. */
  cacheReadTokens: number;
  /** Input tokens written to the provider's prompt cache. */
  cacheWriteTokens: number;
};

export const zeroUsage: Usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };

export type TurnError = { code: ErrorCode; message: string; retryable: boolean };

export type TurnResult = {
  content?: string;
  toolCalls: ToolCall[];
  stopReason: StopReason;
  usage: Usage;
  /** Set when stopReason is 'error': a message a thread can show. */
  error?: TurnError;
  providerState?: unknown;
};

export type TurnRequest = {
  system: string;
  messages: readonly ModelMessage[];
  tools: readonly ToolSpec[];
  maxTokens: number;
  signal: AbortSignal;
  /** Force the model to call this one tool (the verifier's `record_verdict`); default: its choice. */
  toolChoice?: { name: string };
  /** Text as it streams, for live views. The result still carries the merged whole. */
  onDelta?: (text: string) => void;
};

/**
 * One model turn. Contract: never throws. Failures come back as stopReason 'error' with a coded
 * error; an abort comes back as 'aborted' promptly.
 */
export interface ModelProvider {
  readonly name: string;
  readonly model: string;
  /** Context window in tokens, used by the context budget. */
  readonly contextWindow: number;
  runTurn(request: TurnRequest): Promise<TurnResult>;
}
