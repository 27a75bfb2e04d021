import { z } from 'zod';
import { PatchbayError } from '../core/errors.ts';
import { type CallTimeouts, defaultCallTimeouts } from './call-timer.ts';
import type { ModelProviderConfig } from './create-model-provider.ts';
import { defaultRetryPolicy, type RetryPolicy } from './retry-policy.ts';

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
  /** How long one model call may keep retrying, from its first attempt (default 900 s). */
  MODEL_CALL_DEADLINE_SECONDS: z.coerce.number().int().min(10).max(86_400).optional(),
  /** An attempt that sends nothing for this long has failed (default 300 s). */
  MODEL_IDLE_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3_600).optional(),
  /** An attempt that has not finished its answer in this long has failed (default 1200 s). */
  MODEL_TOTAL_TIMEOUT_SECONDS: z.coerce.number().int().min(10).max(86_400).optional(),
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
    ...callLimitsFromEnv(env),
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

/**
 * MODEL_CALL_DEADLINE_SECONDS, MODEL_IDLE_TIMEOUT_SECONDS and MODEL_TOTAL_TIMEOUT_SECONDS as the
 * providers' retry policy and timeouts (the defaults where unset). An idle timeout longer than the
 * total one could never fire: refused, with the line to fix.
 */
function callLimitsFromEnv(env: ModelEnv): { retry?: RetryPolicy; timeouts?: CallTimeouts } {
  const { MODEL_CALL_DEADLINE_SECONDS: deadline, MODEL_IDLE_TIMEOUT_SECONDS: idle } = env;
  const total = env.MODEL_TOTAL_TIMEOUT_SECONDS;
  const timeouts: CallTimeouts = {
    idleMs: idle === undefined ? defaultCallTimeouts.idleMs : idle * 1000,
    totalMs: total === undefined ? defaultCallTimeouts.totalMs : total * 1000,
  };
  if (timeouts.idleMs > timeouts.totalMs)
    throw new PatchbayError(
      'config_invalid',
      `MODEL_IDLE_TIMEOUT_SECONDS (${timeouts.idleMs / 1000}) is longer than MODEL_TOTAL_TIMEOUT_SECONDS (${timeouts.totalMs / 1000}): make the idle timeout the shorter one`,
    );
  return {
    ...(deadline !== undefined && { retry: { ...defaultRetryPolicy, deadlineMs: deadline * 1000 } }),
    ...((idle !== undefined || total !== undefined) && { timeouts }),
  };
}
