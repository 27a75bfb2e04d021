import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createModelProvider } from '../../src/models/create-model-provider.ts';
import { isLocalBaseUrl } from '../../src/models/local-base-url.ts';
import { modelConfigFromEnv, modelEnvSchema } from '../../src/models/model-config.ts';
import { fitMaxTokens, readContextRefusal } from '../../src/models/model-limits.ts';
import type { ModelProvider, TurnRequest } from '../../src/models/model-provider.ts';
import { startFakeLocalModelServer, type FakeLocalModelServer } from '../fakes/fake-local-model-server.ts';

const log = pino({ level: 'silent' });
const opened: FakeLocalModelServer[] = [];
afterEach(async () => {
  for (const fake of opened.splice(0)) await fake.close();
});

async function server(options: Partial<Parameters<typeof startFakeLocalModelServer>[0]> = {}) {
  const fake = await startFakeLocalModelServer({
    flavor: 'vllm',
    model: 'qwen3-coder',
    contextWindow: 8_192,
    chat: () => ({ text: 'done' }),
    ...options,
  });
  opened.push(fake);
  return fake;
}

const providerFor = (fake: FakeLocalModelServer, env: Record<string, string> = {}) =>
  createModelProvider(
    modelConfigFromEnv(
      modelEnvSchema.parse({
        MODEL_PROVIDER: 'openai-compatible',
        MODEL: 'qwen3-coder',
        OPENAI_BASE_URL: fake.baseUrl,
        MODEL_MAX_RETRIES: '0',
        ...env,
      }),
    ),
    { log },
  );

/** A turn as the runner asks for it: 16,000 tokens of reply, whatever the window. */
const turn = (provider: ModelProvider, content = 'Fix the bug.', maxTokens = 16_000) =>
  provider.runTurn({
    system: 'You are a coding agent.',
    messages: [{ role: 'user', content }],
    tools: [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: {} } }],
    maxTokens,
    signal: AbortSignal.timeout(10_000),
  } satisfies TurnRequest);

describe('requests fit the model server', () => {
  it('asks vLLM for a reply that fits its stated max_model_len, not 16,000 tokens', async () => {
    const fake = await server();
    const provider = providerFor(fake);
    const result = await turn(provider);
    expect(result.stopReason).toBe('end_turn');
    expect(fake.refusals).toEqual([]);
    expect(provider.contextWindow).toBe(8_192);
    const sent = fake.calls[0]!.body;
    expect(sent.max_tokens).toBeLessThanOrEqual(8_192 - fake.promptTokens(sent));
    expect(sent.max_tokens).toBeGreaterThan(4_000);
  });

  it('retries once with the prompt size vLLM states when its tokenizer counts more than the estimate', async () => {
    // One and a half characters a token: a dense prompt (code, non-English text) the estimate undercounts.
    const fake = await server({ charsPerToken: 1.5 });
    const provider = providerFor(fake);
    const result = await turn(provider, 'x'.repeat(6_000));
    expect(result.stopReason).toBe('end_turn');
    expect(fake.refusals).toHaveLength(1);
    expect(fake.refusals[0]).toMatch(/^This model's maximum context length is 8192 tokens\. However, you requested/);
    const retried = fake.calls.at(-1)!.body;
    expect(fake.promptTokens(retried) + (retried.max_tokens as number)).toBeLessThanOrEqual(8_192);
  });

  it('reports a prompt that alone overfills the window as model_context_exceeded, for the runner to compact', async () => {
    const fake = await server({ flavor: 'llama.cpp' });
    const provider = providerFor(fake);
    const result = await turn(provider, 'x'.repeat(40_000));
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({
      code: 'model_context_exceeded',
      context: { limit: 8_192, promptTokens: expect.any(Number) },
    });
    expect(fake.refusals[0]).toMatch(/exceeds the available context size \(8192 tokens\)/);
  });

  it.each([
    ['llama.cpp', 4_096],
    ['ollama', 16_384],
  ] as const)('reads the context %s runs with', async (flavor, contextWindow) => {
    const fake = await server({ flavor, contextWindow });
    const provider = providerFor(fake);
    expect((await turn(provider)).stopReason).toBe('end_turn');
    expect(provider.contextWindow).toBe(contextWindow);
    expect(fake.calls[0]!.body.max_tokens).toBeLessThan(contextWindow);
  });

  it('uses MODEL_CONTEXT_WINDOW and MODEL_MAX_OUTPUT_TOKENS as caps', async () => {
    const fake = await server();
    const provider = providerFor(fake, { MODEL_CONTEXT_WINDOW: '6000', MODEL_MAX_OUTPUT_TOKENS: '1000' });
    await turn(provider);
    expect(provider.contextWindow).toBe(6_000);
    expect(fake.calls[0]!.body.max_tokens).toBe(1_000);
  });
});

describe('prices', () => {
  it('counts a server people run themselves as free, unless MODEL_PRICES prices it', async () => {
    const fake = await server();
    expect(providerFor(fake).price).toEqual({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
    const priced = providerFor(fake, { MODEL_PRICES: '{"qwen3-coder":{"input":0.2,"output":0.8}}' });
    expect(priced.price).toEqual({ input: 0.2, output: 0.8, cacheRead: 0.2, cacheWrite: 0.2 });
  });

  it('leaves hosted models to the catalog and refuses a malformed MODEL_PRICES', () => {
    const hosted = createModelProvider({ provider: 'anthropic', apiKey: 'k', model: 'claude-sonnet-4-6' }, { log });
    expect(hosted.price).toBeUndefined();
    const remote = createModelProvider(
      { provider: 'openai-compatible', model: 'm', baseUrl: 'https://models.example.com/v1' },
      { log },
    );
    expect(remote.price).toBeUndefined();
    expect(modelEnvSchema.safeParse({ MODEL_PRICES: '{"m":{"input":"1"}}' }).success).toBe(false);
    expect(modelEnvSchema.safeParse({ MODEL_PRICES: 'not json' }).error?.issues[0]?.message).toMatch(/not JSON/);
  });

  it.each([
    ['http://127.0.0.1:8000/v1', true],
    ['http://localhost:11434/v1', true],
    ['http://[::1]:8080/v1', true],
    ['http://10.1.2.3/v1', true],
    ['http://172.20.0.5/v1', true],
    ['http://192.168.1.9:8000/v1', true],
    ['http://vllm:8000/v1', true],
    ['http://gpu-box.lan/v1', true],
    ['http://172.32.0.1/v1', false],
    ['https://api.together.xyz/v1', false],
    ['http://8.8.8.8/v1', false],
  ])('isLocalBaseUrl(%s) = %s', (url, local) => {
    expect(isLocalBaseUrl(url)).toBe(local);
  });
});

describe('context refusals and fitting, as pure functions', () => {
  it.each([
    [
      "This model's maximum context length is 8192 tokens. However, you requested 20672 tokens (4672 in the messages, 16000 in the completion). Please reduce the length of the messages or completion.",
      { limit: 8_192, promptTokens: 4_672 },
    ],
    [
      'request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it',
      { limit: 8_192, promptTokens: 9_412 },
    ],
    ['prompt is too long: 215000 tokens > 200000 maximum', { limit: 200_000, promptTokens: 215_000 }],
    ["This model's maximum context length is 128000 tokens.", { limit: 128_000 }],
    ['Invalid value for tool_choice', undefined],
  ])('reads %s', (message, expected) => {
    expect(readContextRefusal(message)).toEqual(expected);
  });

  it('fits the reply between the window, the output cap and a floor', () => {
    const limits = { contextWindow: 8_192, maxOutputTokens: Number.POSITIVE_INFINITY };
    expect(fitMaxTokens(16_000, limits, 4_672)).toBe(8_192 - 4_672 - 256);
    expect(fitMaxTokens(1_000, limits, 100)).toBe(1_000);
    expect(fitMaxTokens(16_000, { ...limits, maxOutputTokens: 2_000 }, 100)).toBe(2_000);
    expect(fitMaxTokens(16_000, limits, 8_000)).toBe(512);
  });
});
