import type { ModelImage, ModelMessage, TurnRequest } from './model-provider.ts';

/**
 * How much a model takes and gives per request: its context window (prompt and reply together, as
 * vLLM and llama.cpp count it) and the longest reply it may write.
 */
export type ModelLimits = { contextWindow: number; maxOutputTokens: number };

/** Tokens kept free between the estimated prompt and the window: the estimate is rough. */
const safetyMargin = 256;

/** The smallest reply worth asking for; below it the prompt is what must shrink (compaction). */
export const minReplyTokens = 512;

/**
 * The reply size a request can ask for: what the caller wants, within the model's own output limit
 * and what the window leaves after the prompt. Never below `minReplyTokens`: a prompt that leaves
 * less is refused by the server as too long, and that refusal is what starts a compaction.
 */
export function fitMaxTokens(requested: number, limits: ModelLimits, promptTokens: number): number {
  const room = limits.contextWindow - promptTokens - safetyMargin;
  return Math.max(Math.min(requested, limits.maxOutputTokens, room), Math.min(requested, minReplyTokens));
}

/**
 * A deliberately high token estimate of a request (3 characters a token, where English prose runs
 * near 4 and code near 3.5), so a fitted reply rarely overruns the window. The server's own count,
 * when it refuses, is what the retry uses (see withModelLimits).
 */
export function estimateRequestTokens(request: Pick<TurnRequest, 'system' | 'messages' | 'tools'>): number {
  const text = request.system.length + JSON.stringify(request.tools).length;
  const messages = request.messages.reduce((sum, m) => sum + messageChars(m) + 16, 0);
  const images = request.messages.reduce((sum, m) => sum + imageTokens(m.role === 'assistant' ? [] : m.images), 0);
  return Math.ceil((text + messages) / 3) + images;
}

function messageChars(message: ModelMessage): number {
  if (message.role === 'assistant')
    return (message.content ?? '').length + JSON.stringify(message.toolCalls ?? []).length;
  return message.content.length;
}

/** Anthropic's published estimate (width × height / 750), also a fair guess for other vision models. */
function imageTokens(images: readonly ModelImage[] | undefined): number {
  return (images ?? []).reduce((sum, i) => sum + Math.ceil(((i.width ?? 1568) * (i.height ?? 1568)) / 750), 0);
}

/**
 * What a context-length refusal says, read from the wording of each server: vLLM ("This model's
 * maximum context length is 8192 tokens. However, you requested 20672 tokens (4672 in the messages,
 * 16000 in the completion)"), llama.cpp ("request (9412 tokens) exceeds the available context
 * size (8192 tokens)", type `exceed_context_size_error` with n_prompt_tokens and n_ctx),
 * Anthropic ("prompt is too long: 215000 tokens > 200000 maximum"), OpenAI (`context_length_exceeded`).
 * Undefined when the error is not about the context length.
 */
export type ContextRefusal = { limit?: number; promptTokens?: number };

export function readContextRefusal(message: string, body?: Record<string, unknown>): ContextRefusal | undefined {
  const vllm =
    /maximum context length is (\d+) tokens.*?(?:\((\d+) in the messages|your request has (\d+) input tokens|(\d+) tokens in the messages)/is.exec(
      message,
    );
  if (vllm) return numbers(vllm[1], vllm[2] ?? vllm[3] ?? vllm[4]);
  const maxOnly = /maximum context length is (\d+) tokens/i.exec(message);
  if (maxOnly) return numbers(maxOnly[1], undefined);
  const anthropic = /prompt is too long: (\d+) tokens > (\d+) maximum/i.exec(message);
  if (anthropic) return numbers(anthropic[2], anthropic[1]);
  const llama = /request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)/i.exec(message);
  if (llama) return numbers(llama[2], llama[1]);
  if (body?.type === 'exceed_context_size_error' || /exceeds the available context size/i.test(message))
    return numbers(body?.n_ctx, body?.n_prompt_tokens);
  if (/context_length_exceeded|context length|context window|prompt is too long/i.test(message)) return {};
  return undefined;
}

function numbers(limit: unknown, prompt: unknown): ContextRefusal {
  const n = (v: unknown) => (v === undefined || v === null || v === '' ? undefined : Number(v));
  const l = n(limit);
  const p = n(prompt);
  return {
    ...(l !== undefined && Number.isFinite(l) && { limit: l }),
    ...(p !== undefined && Number.isFinite(p) && { promptTokens: p }),
  };
}
