import { z } from 'zod';
import type { ModelProviderConfig } from './create-model-provider.ts';

/** USD per million tokens; cache prices default to the input price. */
const Price = z
  .object({
    input: z.number().nonnegative(),
    output: z.number().nonnegative(),
    cacheRead: z.number().nonnegative().optional(),
    cacheWrite: z.number().nonnegative().optional(),
  })
  .strict();

/** MODEL_PRICES: a JSON object from model name to its price, e.g. {"qwen3-coder":{"input":0.2,"output":0.8}}. */
const modelPrices = z
  .string()
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'MODEL_PRICES is not JSON: write {"model":{"input":1,"output":2}}' });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().min(1), Price))
  .transform((prices) =>
    Object.fromEntries(
      Object.entries(prices).map(([model, p]) => [
        model,
        { input: p.input, output: p.output, cacheRead: p.cacheRead ?? p.input, cacheWrite: p.cacheWrite ?? p.input },
      ]),
    ),
  );

/**
 * Environment variables for model selection, as a zod object the composition root merges into
 * its own schema (`rootSchema.extend(modelEnvSchema.shape)`). Only the root reads process.env.
 */
export const modelEnvSchema = z.object({
  MODEL_PROVIDER: z.enum(['anthropic', 'openai', 'opencode-zen', 'openai-compatible', 'scripted']).default('scripted'),
  MODEL: z.string().trim().min(1).optional(),
  MODEL_MAX_RETRIES: z.coerce.number().int().min(0).max(10).optional(),
  MODEL_VISION: z.stringbool().optional(),
  /** The model's context window, when its server does not say it (and a cap when it does). */
  MODEL_CONTEXT_WINDOW: z.coerce.number().int().min(1_024).optional(),
  MODEL_MAX_OUTPUT_TOKENS: z.coerce.number().int().min(1).optional(),
  MODEL_PRICES: modelPrices.optional(),
  ANTHROPIC_API_KEY: z.string().trim().min(1).optional(),
  ANTHROPIC_BASE_URL: z.url().optional(),
  OPENAI_API_KEY: z.string().trim().min(1).optional(),
  OPENAI_BASE_URL: z.url().optional(),
  OPENCODE_ZEN_API_KEY: z.string().trim().min(1).optional(),
  OPENCODE_ZEN_BASE_URL: z.url().optional(),
});
export type ModelEnv = z.infer<typeof modelEnvSchema>;

/** Picks the key and base URL that belong to the selected provider. */
export function modelConfigFromEnv(env: ModelEnv): ModelProviderConfig {
  const common = {
    model: env.MODEL,
    maxRetries: env.MODEL_MAX_RETRIES,
    vision: env.MODEL_VISION,
    contextWindow: env.MODEL_CONTEXT_WINDOW,
    maxOutputTokens: env.MODEL_MAX_OUTPUT_TOKENS,
    prices: env.MODEL_PRICES,
  };
  switch (env.MODEL_PROVIDER) {
    case 'anthropic':
      return { provider: 'anthropic', ...common, apiKey: env.ANTHROPIC_API_KEY, baseUrl: env.ANTHROPIC_BASE_URL };
    case 'openai':
    case 'openai-compatible':
      return { provider: env.MODEL_PROVIDER, ...common, apiKey: env.OPENAI_API_KEY, baseUrl: env.OPENAI_BASE_URL };
    case 'opencode-zen':
      return {
        provider: 'opencode-zen',
        ...common,
        apiKey: env.OPENCODE_ZEN_API_KEY,
        baseUrl: env.OPENCODE_ZEN_BASE_URL,
      };
    case 'scripted':
      return { provider: 'scripted', ...common };
    default: {
      const _never: never = env.MODEL_PROVIDER;
      return _never;
    }
  }
}
