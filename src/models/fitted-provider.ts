import type { Logger } from 'pino';
import type { ModelPrice } from './model-catalog.ts';
import { estimateRequestTokens, fitMaxTokens, minReplyTokens, type ModelLimits } from './model-limits.ts';
import type { ModelProvider, TurnRequest, TurnResult } from './model-provider.ts';
import type { ServerLimits } from './server-limits.ts';

export type FitOptions = {
  /** MODEL_CONTEXT_WINDOW: the window when the server states none, and a cap when it does. */
  contextWindow?: number | undefined;
  /** MODEL_MAX_OUTPUT_TOKENS, or the catalog's cap for the model. */
  maxOutputTokens?: number | undefined;
  /** Asks the server what it runs with (OpenAI-compatible servers only). */
  discover?: ((signal: AbortSignal) => Promise<ServerLimits>) | undefined;
  price?: ModelPrice | undefined;
  log: Logger;
};

export type FittedProvider = ModelProvider & { limits(signal: AbortSignal): Promise<ModelLimits> };

/**
 * The provider with every request fitted to the model's limits: the reply asked for is what the
 * window leaves after the prompt, within the model's output cap. The window is what the server
 * states (asked once, on the first turn), else the setting, else the catalog's; when the server
 * refuses a request as too long and says how long the prompt was, the same request is sent once
 * more with the reply that fits, and a smaller window the refusal names is kept for later turns.
 * A prompt that is itself too long comes back as 'model_context_exceeded' for the runner to compact.
 */
export function withModelLimits(inner: ModelProvider, options: FitOptions): FittedProvider {
  let known: ModelLimits | undefined;
  const fallback = (): ModelLimits => ({
    contextWindow: options.contextWindow ?? inner.contextWindow,
    maxOutputTokens: options.maxOutputTokens ?? Number.POSITIVE_INFINITY,
  });

  async function limits(signal: AbortSignal): Promise<ModelLimits> {
    if (known) return known;
    if (!options.discover) return fallback();
    const server = await options.discover(signal);
    const stated = server.contextWindow;
    const resolved: ModelLimits = {
      contextWindow: Math.min(
        stated ?? Number.POSITIVE_INFINITY,
        options.contextWindow ?? stated ?? inner.contextWindow,
      ),
      maxOutputTokens: Math.min(
        server.maxOutputTokens ?? Number.POSITIVE_INFINITY,
        options.maxOutputTokens ?? Number.POSITIVE_INFINITY,
      ),
    };
    options.log.info({ ...resolved, source: server.source ?? 'settings' }, 'model limits');
    // A server that answered nothing may be starting: ask again on the next turn.
    if (stated !== undefined || server.models !== undefined) known = resolved;
    return resolved;
  }

  async function runTurn(request: TurnRequest): Promise<TurnResult> {
    const current = await limits(request.signal);
    const maxTokens = fitMaxTokens(request.maxTokens, current, estimateRequestTokens(request));
    const result = await inner.runTurn({ ...request, maxTokens });
    const refusal =
      result.stopReason === 'error' && result.error?.code === 'model_context_exceeded' && result.error.context;
    if (!refusal) return result;
    const window = Math.min(refusal.limit ?? current.contextWindow, current.contextWindow);
    if (window < current.contextWindow) {
      options.log.warn({ contextWindow: window }, 'the server refused a request over a smaller window than known');
      known = { ...current, contextWindow: window };
    }
    if (refusal.promptTokens === undefined) return result;
    const room = window - refusal.promptTokens - 64;
    if (room < Math.min(minReplyTokens, request.maxTokens) || room >= maxTokens) return result;
    return inner.runTurn({ ...request, maxTokens: room });
  }

  return {
    name: inner.name,
    model: inner.model,
    get contextWindow() {
      return (known ?? fallback()).contextWindow;
    },
    get maxOutputTokens() {
      return (known ?? fallback()).maxOutputTokens;
    },
    ...(options.price && { price: options.price }),
    limits,
    runTurn,
  };
}
