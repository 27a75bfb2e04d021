import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { isPatchbayError } from '../../src/core/errors.ts';
import { createModelProvider } from '../../src/models/create-model-provider.ts';
import type { ModelProviderConfig } from '../../src/models/create-model-provider.ts';
import { modelConfigFromEnv, modelEnvSchema } from '../../src/models/model-config.ts';
import { budgetCostUsd, estimateCostUsd, contextWindowFor, unknownModelPrice } from '../../src/models/model-catalog.ts';
import { zenRouteFor } from '../../src/models/opencode-zen-provider.ts';
import { startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import type { FakeAnthropic } from '../fakes/fake-anthropic.ts';

const log = pino({ level: 'silent' });

function configError(config: ModelProviderConfig): string {
  try {
    createModelProvider(config, { log });
  } catch (error) {
    if (isPatchbayError(error, 'config_invalid')) return error.message;
    throw error;
  }
  throw new Error('expected a config error');
}

describe('createModelProvider', () => {
  it.each<[ModelProviderConfig, RegExp]>([
    [{ provider: 'gemini' }, /^MODEL_PROVIDER "gemini" is not known; use one of anthropic, openai/],
    [{ provider: 'anthropic' }, /needs ANTHROPIC_API_KEY/],
    [{ provider: 'openai', model: 'gpt-5' }, /needs OPENAI_API_KEY/],
    [{ provider: 'openai-compatible', model: 'qwen3' }, /needs OPENAI_BASE_URL/],
    [{ provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:11434/v1' }, /needs MODEL/],
    [
      { provider: 'anthropic', apiKey: 'k', baseUrl: 'not a url' },
      /base URL "not a url" for anthropic is not a valid URL/,
    ],
  ])('refuses %j with one clear line', (config, message) => {
    const text = configError(config);
    expect(text).toMatch(message);
    expect(text).not.toContain('\n');
  });

  it('builds each provider with its name and a default model', () => {
    expect(createModelProvider({ provider: 'anthropic', apiKey: 'k' }, { log })).toMatchObject({
      name: 'anthropic',
      model: 'claude-sonnet-4-6',
      contextWindow: 200_000,
    });
    expect(createModelProvider({ provider: 'openai', apiKey: 'k' }, { log })).toMatchObject({
      name: 'openai',
      model: 'gpt-5.1-codex',
      contextWindow: 400_000,
    });
    expect(createModelProvider({ provider: 'opencode-zen', model: 'opencode/glm-4.6' }, { log })).toMatchObject({
      name: 'opencode-zen',
      model: 'glm-4.6',
    });
    expect(createModelProvider({ provider: 'scripted', scenario: [{ text: 'hi' }] }, { log }).name).toBe('scripted');
  });

  it('runs the scripted provider behind the same port', async () => {
    const provider = createModelProvider({ provider: 'scripted', scenario: [{ text: 'hello' }] }, { log });
    const result = await provider.runTurn({
      system: '',
      messages: [{ role: 'user', content: 'x' }],
      tools: [],
      maxTokens: 10,
      signal: new AbortController().signal,
    });
    expect(result).toMatchObject({ stopReason: 'end_turn', content: 'hello' });
  });
});

describe('modelEnvSchema and modelConfigFromEnv', () => {
  it('defaults to the scripted provider', () => {
    expect(modelConfigFromEnv(modelEnvSchema.parse({}))).toMatchObject({ provider: 'scripted' });
  });

  it('picks the selected provider’s key and base URL', () => {
    const env = modelEnvSchema.parse({
      MODEL_PROVIDER: 'opencode-zen',
      MODEL: 'claude-sonnet-4-6',
      ANTHROPIC_API_KEY: 'a',
      OPENCODE_ZEN_API_KEY: 'z',
      OPENCODE_ZEN_BASE_URL: 'http://127.0.0.1:1/zen/v1',
    });
    expect(modelConfigFromEnv(env)).toEqual({
      provider: 'opencode-zen',
      model: 'claude-sonnet-4-6',
      apiKey: 'z',
      baseUrl: 'http://127.0.0.1:1/zen/v1',
      maxRetries: undefined,
    });
  });

  it('rejects an unknown provider and a malformed URL at parse time', () => {
    expect(modelEnvSchema.safeParse({ MODEL_PROVIDER: 'gemini' }).success).toBe(false);
    expect(modelEnvSchema.safeParse({ OPENAI_BASE_URL: 'localhost' }).success).toBe(false);
  });
});

describe('opencode zen', () => {
  let fake: FakeAnthropic | undefined;
  afterEach(async () => fake?.close());

  it('routes model families to their endpoint', () => {
    expect(
      ['claude-opus-4-5', 'gpt-5.1-codex', 'opencode/gpt-5', 'glm-4.6', 'kimi-k2', 'big-pickle'].map(zenRouteFor),
    ).toEqual(['messages', 'responses', 'responses', 'chat', 'chat', 'chat']);
  });

  it('sends only x-api-key to the Messages route and reports a refused key clearly', async () => {
    fake = await startFakeAnthropic({
      script: () => ({ content: [{ type: 'text', text: 'hi' }] }),
      apiKey: 'zen-key',
      pathPrefix: '/zen',
      auth: 'x-api-key-only',
    });
    const baseUrl = `${fake.baseUrl}/v1`;
    const ok = createModelProvider(
      { provider: 'opencode-zen', model: 'claude-haiku-4-5', apiKey: 'zen-key', baseUrl, maxRetries: 0 },
      { log },
    );
    const request = {
      system: 's',
      messages: [{ role: 'user' as const, content: 'x' }],
      tools: [],
      maxTokens: 10,
      signal: AbortSignal.timeout(5000),
    };
    expect(await ok.runTurn(request)).toMatchObject({ stopReason: 'end_turn', content: 'hi' });
    expect(fake.calls[0]?.headers.authorization).toBeUndefined();
    const wrong = createModelProvider(
      { provider: 'opencode-zen', model: 'claude-haiku-4-5', apiKey: 'nope', baseUrl, maxRetries: 0 },
      { log },
    );
    const result = await wrong.runTurn(request);
    expect(result.error?.message).toMatch(/^OpenCode Zen rejected the API key/);
  });
});

describe('estimateCostUsd', () => {
  it('prices known models, cached tokens at their own rate', () => {
    const usage = {
      inputTokens: 1_000_000,
      outputTokens: 100_000,
      cacheReadTokens: 800_000,
      cacheWriteTokens: 100_000,
    };
    // Sonnet: 100k uncached × $3 + 800k read × $0.30 + 100k write × $3.75 + 100k out × $15 (per M)
    expect(estimateCostUsd('claude-sonnet-4-6', usage)).toBeCloseTo(0.3 + 0.24 + 0.375 + 1.5, 6);
    expect(estimateCostUsd('claude-sonnet-4-5-20250929', usage)).toBeCloseTo(2.415, 6);
    expect(
      estimateCostUsd('gpt-5.1-codex', {
        inputTokens: 1_000_000,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      }),
    ).toBeCloseTo(1.25, 6);
    expect(
      estimateCostUsd('gpt-5-mini', {
        inputTokens: 1_000_000,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      }),
    ).toBeCloseTo(0.25, 6);
  });

  it('returns undefined for unknown models and new minor versions it cannot know', () => {
    const usage = { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 };
    expect(estimateCostUsd('qwen3-coder', usage)).toBeUndefined();
    expect(estimateCostUsd('claude-opus-4-8', usage)).toBeUndefined();
    expect(contextWindowFor('qwen3-coder')).toBe(128_000);
  });
});

describe('budgetCostUsd', () => {
  it('counts a model without a known price at the conservative default, and the scripted provider as free', () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 100_000, cacheReadTokens: 0, cacheWriteTokens: 0 };
    expect(budgetCostUsd('qwen3-coder', usage)).toBeCloseTo(
      unknownModelPrice.input + 0.1 * unknownModelPrice.output,
      6,
    );
    expect(budgetCostUsd('qwen3-coder', usage)).toBeCloseTo(22.5, 6);
    expect(budgetCostUsd('claude-sonnet-4-6', usage)).toBeCloseTo(estimateCostUsd('claude-sonnet-4-6', usage)!, 6);
    expect(budgetCostUsd('scripted-verifier', usage)).toBe(0);
  });
});
