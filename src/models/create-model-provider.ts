import type { Logger } from 'pino';
import { PatchbayError } from '../core/errors.ts';
import type { ModelProvider } from './model-provider.ts';
import { createAnthropicProvider } from './anthropic-provider.ts';
import { createOpenAIChatProvider } from './openai-chat-provider.ts';
import { createOpenAIResponsesProvider } from './openai-responses-provider.ts';
import { createOpenCodeZenProvider, defaultZenBaseUrl } from './opencode-zen-provider.ts';
import { createScriptedProvider } from './scripted-provider.ts';
import type { Scenario } from './scripted-provider.ts';
import { withModelLimits } from './fitted-provider.ts';
import { isLocalBaseUrl } from './local-base-url.ts';
import { modelInfo, type ModelPrice } from './model-catalog.ts';
import { discoverServerLimits } from './server-limits.ts';
import type { CallTimeouts } from './call-timer.ts';
import type { RetryPolicy } from './retry-policy.ts';

export const modelProviderNames = ['anthropic', 'openai', 'opencode-zen', 'openai-compatible', 'scripted'] as const;
export type ModelProviderName = (typeof modelProviderNames)[number];

/** Already-parsed config; the composition root builds it (see modelConfigFromEnv). */
export type ModelProviderConfig = {
  provider: ModelProviderName | (string & {});
  model?: string | undefined;
  apiKey?: string | undefined;
  baseUrl?: string | undefined;
  scenario?: Scenario | undefined;
  maxRetries?: number | undefined;
  /** Whether the model reads images; unset: Anthropic and OpenAI do, OpenAI-compatible servers do not. */
  vision?: boolean | undefined;
  /** MODEL_CONTEXT_WINDOW and MODEL_MAX_OUTPUT_TOKENS (see withModelLimits). */
  contextWindow?: number | undefined;
  maxOutputTokens?: number | undefined;
  /** MODEL_PRICES: by model name. */
  prices?: Record<string, ModelPrice> | undefined;
  /** MODEL_CALL_DEADLINE_SECONDS as a retry policy; unset: defaultRetryPolicy. */
  retry?: RetryPolicy | undefined;
  /** MODEL_IDLE_TIMEOUT_SECONDS and MODEL_TOTAL_TIMEOUT_SECONDS; unset: defaultCallTimeouts. */
  timeouts?: CallTimeouts | undefined;
};

export type ModelProviderDeps = { log: Logger; fetch?: typeof fetch };

/** Used when MODEL is not set. */
export const defaultModels: Record<Exclude<ModelProviderName, 'openai-compatible'>, string> = {
  anthropic: 'claude-sonnet-4-6',
  openai: 'gpt-5.1-codex',
  'opencode-zen': 'gpt-5.1-codex',
  scripted: 'scripted',
};

/**
 * Builds the configured provider. Throws PatchbayError('config_invalid') with one actionable line
 * for an unknown provider, a missing key or base URL, or a malformed base URL; it does no I/O, so
 * a key the vendor refuses surfaces as the first turn's 'model_auth' error.
 */
export function createModelProvider(config: ModelProviderConfig, deps: ModelProviderDeps): ModelProvider {
  const provider = createVendorProvider(config, deps);
  if (provider.name === 'scripted') return provider;
  const local = config.provider === 'openai-compatible' && isLocalBaseUrl(config.baseUrl ?? '');
  const price = config.prices?.[provider.model] ?? (local ? freePrice : undefined);
  const discover =
    config.provider === 'openai-compatible' && config.baseUrl
      ? (signal: AbortSignal) =>
          discoverServerLimits({
            baseUrl: config.baseUrl!,
            model: provider.model,
            apiKey: config.apiKey,
            fetch: deps.fetch,
            signal,
          })
      : undefined;
  return withModelLimits(provider, {
    contextWindow: config.contextWindow,
    maxOutputTokens: config.maxOutputTokens ?? modelInfo(provider.model)?.maxOutput,
    discover,
    price,
    log: deps.log.child({ component: 'model' }),
  });
}

const freePrice: ModelPrice = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

function createVendorProvider(config: ModelProviderConfig, deps: ModelProviderDeps): ModelProvider {
  const invalid = (message: string) => new PatchbayError('config_invalid', message);
  const provider = config.provider as ModelProviderName;
  if (!modelProviderNames.includes(provider)) {
    throw invalid(`MODEL_PROVIDER "${config.provider}" is not known; use one of ${modelProviderNames.join(', ')}`);
  }
  if (config.baseUrl !== undefined && !URL.canParse(config.baseUrl)) {
    throw invalid(`The base URL "${config.baseUrl}" for ${provider} is not a valid URL`);
  }
  const log = deps.log.child({ component: 'model' });
  const common = {
    maxRetries: config.maxRetries,
    retry: config.retry,
    timeouts: config.timeouts,
    vision: config.vision,
    log,
    fetch: deps.fetch,
  };
  switch (provider) {
    case 'anthropic':
      if (!config.apiKey)
        throw invalid('MODEL_PROVIDER=anthropic needs ANTHROPIC_API_KEY (create one at console.anthropic.com)');
      return createAnthropicProvider({
        ...common,
        model: config.model ?? defaultModels.anthropic,
        apiKey: config.apiKey,
        baseUrl: config.baseUrl,
      });
    case 'openai':
      if (!config.apiKey)
        throw invalid('MODEL_PROVIDER=openai needs OPENAI_API_KEY (create one at platform.openai.com)');
      return createOpenAIResponsesProvider({
        ...common,
        model: config.model ?? defaultModels.openai,
        apiKey: config.apiKey,
        baseUrl: config.baseUrl,
      });
    case 'opencode-zen':
      if (!config.apiKey)
        log.warn('OPENCODE_ZEN_API_KEY is not set: using anonymous access, which only free models allow');
      return createOpenCodeZenProvider({
        ...common,
        model: config.model ?? defaultModels['opencode-zen'],
        apiKey: config.apiKey,
        baseUrl: config.baseUrl ?? defaultZenBaseUrl,
      });
    case 'openai-compatible':
      if (!config.baseUrl)
        throw invalid(
          'MODEL_PROVIDER=openai-compatible needs OPENAI_BASE_URL (for example http://localhost:11434/v1 for Ollama)',
        );
      if (!config.model)
        throw invalid('MODEL_PROVIDER=openai-compatible needs MODEL (the model name your server serves)');
      return createOpenAIChatProvider({
        ...common,
        model: config.model,
        apiKey: config.apiKey,
        baseUrl: config.baseUrl,
      });
    case 'scripted':
      return createScriptedProvider({
        scenario: config.scenario ?? [{ text: 'Scripted model: no scenario configured.' }],
        model: config.model,
      });
    default: {
      const _never: never = provider;
      throw invalid(`MODEL_PROVIDER "${String(_never)}" is not known`);
    }
  }
}
