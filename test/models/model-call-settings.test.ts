import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { TurnRequest } from '../../src/models/model-provider.ts';
import { startModels } from '../../src/start/start-model.ts';
import { type AnthropicReply, startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import { type OpenAIReply, startFakeOpenAI } from '../fakes/fake-openai.ts';

const log = pino({ level: 'silent' });
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** The model a process builds from these settings alone, talking to a loopback Anthropic that answers `reply`. */
async function modelFrom(env: Record<string, string>, reply: AnthropicReply) {
  const fake = await startFakeAnthropic({ script: () => reply });
  closers.push(fake.close);
  const config = loadConfig({
    MODEL_PROVIDER: 'anthropic',
    ANTHROPIC_API_KEY: 'test-anthropic-key',
    ANTHROPIC_BASE_URL: fake.baseUrl,
    ...env,
  });
  const { model } = await startModels(config, {}, log);
  return { model, fake };
}

/** The same, from MODEL_PROVIDER=openai (the Responses API) on a loopback OpenAI. */
async function openAIModelFrom(env: Record<string, string>, reply: OpenAIReply) {
  const fake = await startFakeOpenAI({ responses: () => reply });
  closers.push(fake.close);
  const config = loadConfig({
    MODEL_PROVIDER: 'openai',
    OPENAI_API_KEY: 'test-openai-key',
    OPENAI_BASE_URL: fake.baseUrl,
    ...env,
  });
  const { model } = await startModels(config, {}, log);
  return { model, fake };
}

function request(): TurnRequest {
  return {
    system: 'You are Patchbay.',
    messages: [{ role: 'user', content: 'fix the handler' }],
    tools: [],
    maxTokens: 1024,
    signal: AbortSignal.timeout(60_000),
  };
}

/** The model call timeouts are settings: each one, set, is the one a call runs under. */
describe('model call settings', () => {
  it('MODEL_IDLE_TIMEOUT_SECONDS: a server that sends nothing is given up on after it (not the 5-minute default)', {
    timeout: 20_000,
  }, async () => {
    const { model } = await modelFrom({ MODEL_IDLE_TIMEOUT_SECONDS: '1', MODEL_MAX_RETRIES: '0' }, { kind: 'hang' });
    const result = await model.runTurn(request());
    expect(result.error).toMatchObject({ code: 'timeout', message: expect.stringMatching(/sent nothing for 1 s/) });
  });

  it('MODEL_CALL_DEADLINE_SECONDS: a retry whose wait would end past the deadline is not started', {
    timeout: 20_000,
  }, async () => {
    const overloaded: AnthropicReply = {
      kind: 'error',
      status: 529,
      type: 'overloaded_error',
      message: 'Overloaded',
      headers: { 'retry-after': '30' },
    };
    const { model, fake } = await modelFrom({ MODEL_CALL_DEADLINE_SECONDS: '10' }, overloaded);
    const result = await model.runTurn(request());
    expect(result.error).toMatchObject({ code: 'model_overloaded', retryable: true });
    expect(fake.calls).toHaveLength(1);
  });

  it('MODEL_TOTAL_TIMEOUT_SECONDS: an answer that trickles in (never idle for the 3 s idle timeout) is given up on when its total is spent', {
    timeout: 60_000,
  }, async () => {
    // An event every 0.5 s for about 20 s: the 3 s idle timeout never fires (a busy machine may delay an event), the 10 s total (its least) does.
    const text = 'The handler now checks the token before it reads the body. '.repeat(5);
    const env = { MODEL_TOTAL_TIMEOUT_SECONDS: '10', MODEL_IDLE_TIMEOUT_SECONDS: '3', MODEL_MAX_RETRIES: '0' };
    const anthropic = await modelFrom(env, { content: [{ type: 'text', text }], trickleMs: 500 });
    const openai = await openAIModelFrom(env, { text, trickleMs: 500 });
    const results = await Promise.all([anthropic.model.runTurn(request()), openai.model.runTurn(request())]);
    for (const result of results)
      expect(result.error).toMatchObject({
        code: 'timeout',
        message: expect.stringMatching(/did not finish its answer within 10 s/),
        retryable: true,
      });
    expect([anthropic.fake.rejections, openai.fake.rejections]).toEqual([[], []]);
  });

  it('a bad value is refused at start with the variable named', () => {
    const base = { MODEL_PROVIDER: 'anthropic', ANTHROPIC_API_KEY: 'k' };
    expect(() => loadConfig({ ...base, MODEL_IDLE_TIMEOUT_SECONDS: '0' })).toThrow(/MODEL_IDLE_TIMEOUT_SECONDS/);
    expect(() => loadConfig({ ...base, MODEL_CALL_DEADLINE_SECONDS: 'soon' })).toThrow(/MODEL_CALL_DEADLINE_SECONDS/);
    expect(() =>
      loadConfig({ ...base, MODEL_IDLE_TIMEOUT_SECONDS: '600', MODEL_TOTAL_TIMEOUT_SECONDS: '300' }),
    ).toThrow(
      'MODEL_IDLE_TIMEOUT_SECONDS (600) is longer than MODEL_TOTAL_TIMEOUT_SECONDS (300): make the idle timeout the shorter one',
    );
  });
});
