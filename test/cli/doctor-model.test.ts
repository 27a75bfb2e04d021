import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { checkModel } from '../../src/cli/doctor-model-check.ts';
import { loadConfig } from '../../src/config.ts';
import type { OpenAIRequestBody } from '../fakes/fake-openai.ts';
import { startFakeLocalModelServer, type FakeLocalModelServer } from '../fakes/fake-local-model-server.ts';

/**
 * `doctor`'s model row against self-hosted servers as they behave: green only after a real
 * tool-call round trip; each way such a server fails every run is one red row that says so.
 */
const log = pino({ level: 'silent' });
let fake: FakeLocalModelServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** A model that calls the tool it is offered, then answers with the result. */
function toolModel(body: OpenAIRequestBody) {
  const last = (body.messages as Array<{ role: string }>).at(-1);
  if (body.tools && last?.role !== 'tool') return { toolCalls: [{ name: 'echo', arguments: { text: 'pong' } }] };
  return { text: 'pong' };
}

async function modelRow(
  options: Partial<Parameters<typeof startFakeLocalModelServer>[0]>,
  env: (baseUrl: string) => Record<string, string> = (baseUrl) => ({ OPENAI_BASE_URL: baseUrl }),
) {
  fake = await startFakeLocalModelServer({
    flavor: 'vllm',
    model: 'qwen3-coder',
    contextWindow: 32_768,
    chat: toolModel,
    ...options,
  });
  const config = loadConfig({ MODEL_PROVIDER: 'openai-compatible', MODEL: 'qwen3-coder', ...env(fake.baseUrl) });
  return checkModel({ config, log, signal: AbortSignal.timeout(20_000) });
}

describe('doctor: the model row for a self-hosted server', () => {
  it('is green after the model called a tool and answered with its result', async () => {
    const row = await modelRow({});
    expect(row).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/called a tool and answered with its result/),
    });
    expect(fake!.calls.at(-1)!.body.messages).toContainEqual(
      expect.objectContaining({ role: 'tool', content: 'pong' }),
    );
    expect(fake!.refusals).toEqual([]);
  });

  it('is red for a server that cannot do tool calls (vLLM without --enable-auto-tool-choice)', async () => {
    const row = await modelRow({ tools: 'none' });
    expect(row.ok).toBe(false);
    expect(row.detail).toMatch(
      /^openai-compatible\/qwen3-coder: the server cannot do tool calls: .*enable-auto-tool-choice/,
    );
    expect(row.fix).toMatch(/--enable-auto-tool-choice/);
  });

  it('is red for a model that answers in text instead of calling the tool', async () => {
    const row = await modelRow({ chat: () => ({ text: 'I would call echo with pong.' }) });
    expect(row).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/answered in text instead of calling a tool/),
    });
  });

  it('is red for a base URL without /v1, naming the one that works', async () => {
    const row = await modelRow({}, (baseUrl) => ({ OPENAI_BASE_URL: baseUrl.replace(/\/v1$/, '') }));
    expect(row.ok).toBe(false);
    expect(row.detail).toMatch(/^OPENAI_BASE_URL http:\/\/127\.0\.0\.1:\d+ has no \/v1/);
    expect(row.fix).toMatch(/^set OPENAI_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  it('is red for a model the server does not serve, listing what it serves', async () => {
    const row = await modelRow({}, (baseUrl) => ({ OPENAI_BASE_URL: baseUrl, MODEL: 'qwen3-coder:latest' }));
    expect(row).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/does not serve qwen3-coder:latest; it serves qwen3-coder$/),
    });
  });

  it('is red for a context window too small for the tools', async () => {
    const row = await modelRow({ flavor: 'llama.cpp', contextWindow: 2_048 });
    expect(row.ok).toBe(false);
    expect(row.detail).toMatch(
      /^the context window is 2048 tokens \(n_ctx in \/props\); the agent's tools alone take about \d+/,
    );
    expect(row.fix).toMatch(/--ctx-size/);
  });

  it('is red for a server that does not stream', async () => {
    const row = await modelRow({ streams: false });
    expect(row).toMatchObject({ ok: false, detail: expect.stringMatching(/does not stream/) });
  });
});
