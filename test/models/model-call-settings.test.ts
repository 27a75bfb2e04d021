import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import type { TurnRequest } from '../../src/models/model-provider.ts';
import { startModels } from '../../src/start/start-model.ts';
import { type AnthropicReply, startFakeAnthropic } from '../fakes/fake-anthropic.ts';

const log = pino({ level: 'silent' });
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** The model a process builds from these settings alone, talking to a loopback Anthropic that answers `reply`. */
async function modelFrom(env: Record<string, string>, reply: AnthropicReply) {
  const fake = await startFakeAnthropic({ script: () => reply });
  close = fake.close;
  const config = loadConfig({
    MODEL_PROVIDER: 'anthropic',
    ANTHROPIC_API_KEY: 'test-anthropic-key',
    ANTHROPIC_BASE_URL: fake.baseUrl,
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
