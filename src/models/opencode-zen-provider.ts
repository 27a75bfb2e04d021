import type { CallSettings } from './stream-turn.ts';
import type { Logger } from 'pino';
import type { ModelProvider } from './model-provider.ts';
import { createAnthropicProvider } from './anthropic-provider.ts';
import { createOpenAIChatProvider } from './openai-chat-provider.ts';
import { createOpenAIResponsesProvider } from './openai-responses-provider.ts';

export const defaultZenBaseUrl = 'https://opencode.ai/zen/v1';

export type ZenRoute = 'messages' | 'responses' | 'chat';

/**
 * Zen serves each model family on its vendor's own format (wire-formats §5.6): Claude on
 * /messages (which reads only x-api-key), GPT on /responses, the rest on /chat/completions.
 * Gemini's generateContent route is not used; Zen converts Chat Completions for it.
 */
export function zenRouteFor(model: string): ZenRoute {
  const bare = model.replace(/^opencode\//, '');
  if (bare.startsWith('claude-')) return 'messages';
  if (/^(gpt-|o\d|codex)/.test(bare)) return 'responses';
  return 'chat';
}

export type OpenCodeZenProviderOptions = {
  model: string;
  /** Absent: Zen's anonymous access ('public'), which its free models allow. */
  apiKey?: string | undefined;
  /** Ends in /v1, e.g. https://opencode.ai/zen/v1. */
  baseUrl?: string | undefined;
  maxRetries?: number | undefined;
  retry?: CallSettings['retry'];
  timeouts?: CallSettings['timeouts'];
  /** Whether the model reads images (default: the route's default); without, each image is a note in the text. */
  vision?: boolean | undefined;
  log: Logger;
  fetch?: typeof fetch | undefined;
};

export function createOpenCodeZenProvider(options: OpenCodeZenProviderOptions): ModelProvider {
  const baseUrl = (options.baseUrl ?? defaultZenBaseUrl).replace(/\/+$/, '');
  const model = options.model.replace(/^opencode\//, '');
  const apiKey = options.apiKey ?? 'public';
  const common = {
    model,
    apiKey,
    maxRetries: options.maxRetries,
    retry: options.retry,
    timeouts: options.timeouts,
    vision: options.vision,
    log: options.log,
    fetch: options.fetch,
    vendorLabel: 'OpenCode Zen',
  };
  const route = zenRouteFor(model);
  let inner: ModelProvider;
  switch (route) {
    case 'messages':
      // The Anthropic SDK appends /v1/messages itself.
      inner = createAnthropicProvider({ ...common, baseUrl: baseUrl.replace(/\/v1$/, ''), authHeader: 'x-api-key' });
      break;
    case 'responses':
      inner = createOpenAIResponsesProvider({ ...common, baseUrl, name: 'opencode-zen' });
      break;
    case 'chat':
      inner = createOpenAIChatProvider({ ...common, baseUrl, name: 'opencode-zen' });
      break;
    default: {
      const _never: never = route;
      throw new Error(`unknown route ${String(_never)}`);
    }
  }
  return {
    name: 'opencode-zen',
    model,
    contextWindow: inner.contextWindow,
    runTurn: (request) => inner.runTurn(request),
  };
}
