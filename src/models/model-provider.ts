import type { ErrorCode } from '../core/errors.ts';
import type { ModelMessage, ToolCall, Usage } from '../core/transcript.ts';
import type { ContextRefusal } from './model-limits.ts';
import type { ModelPrice } from './model-catalog.ts';

// The transcript vocabulary lives in core (the run log stores it); re-exported for the adapters.
export type { ModelImage, ModelMessage, ToolCall, Usage } from '../core/transcript.ts';
export { zeroUsage } from '../core/transcript.ts';

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

export type TurnError = {
  code: ErrorCode;
  message: string;
  retryable: boolean;
  /** How long the server asked us to wait before trying again (Retry-After, a spent rate-limit window). */
  retryAfterMs?: number | undefined;
  /** With 'model_context_exceeded': the window and the prompt's size, as far as the server said them. */
  context?: ContextRefusal;
  /**
   * With a request the API refused for one of its pictures: which one, counted from the first
   * picture of the request's messages (so the runner can drop it and try once more).
   */
  refusedImage?: number | undefined;
};

/** A failed attempt that will be tried again after `delayMs`: the `retry`th retry of this call. */
export type RetryNotice = { error: TurnError; retry: number; delayMs: number };

export type TurnResult = {
  content?: string | undefined;
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
  /** What is left of the run's time budget: retries never wait past it. */
  retryWithinMs?: number | undefined;
  /** Before each wait for a retry (the service is slow or down). Awaited; must not throw. */
  onRetry?: (notice: RetryNotice) => void | Promise<void>;
};

/**
 * One model turn. Contract: never throws. Failures come back as stopReason 'error' with a coded
 * error, once the retries a transient one gets are spent; an abort comes back as 'aborted' promptly.
 */
export interface ModelProvider {
  readonly name: string;
  readonly model: string;
  /** Context window in tokens, used by the context budget. */
  readonly contextWindow: number;
  /** The longest reply the model may write, when it is known to be below what a turn asks for. */
  readonly maxOutputTokens?: number;
  /** What its tokens cost (a setting, or zero for a server people run themselves); unset: the catalog's. */
  readonly price?: ModelPrice;
  runTurn(request: TurnRequest): Promise<TurnResult>;
}
