import { z } from 'zod';
import type { ModelProviderConfig } from './create-model-provider.ts';

/**
 * Environment variables for model selection, as a zod object the composition root merges into
 * its own schema (`rootSchema.extend(modelEnvSchema.shape)`). Only the root reads process.env.
 */
export const modelEnvSchema = z.object({
  MODEL_PROVIDER: z.enum(['anthropic', 'openai', 'opencode-zen', 'openai-compatible', 'scripted']).default('scripted'),
  MODEL: z.string().trim().min(1).optional(),
  MODEL_MAX_RETRIES: z.coerce.number().int().min(0).max(10).optional(),
  MODEL_VISION: z.stringbool().optional(),
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
  const common = { model: env.MODEL, maxRetries: env.MODEL_MAX_RETRIES, vision: env.MODEL_VISION };
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
