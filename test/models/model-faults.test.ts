import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../src/models/anthropic-provider.ts';
import type { CallTimeouts } from '../../src/models/call-timer.ts';
import type { ModelProvider, RetryNotice, TurnRequest } from '../../src/models/model-provider.ts';
import { createOpenAIChatProvider } from '../../src/models/openai-chat-provider.ts';
import { createOpenAIResponsesProvider } from '../../src/models/openai-responses-provider.ts';
import type { RetryPolicy } from '../../src/models/retry-policy.ts';
import { type AnthropicReply, startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import { type OpenAIReply, startFakeOpenAI } from '../fakes/fake-openai.ts';

const log = pino({ level: 'silent' });
/** Short waits, so the retries of a test take milliseconds; the policy's shape is the real one. */
const quick: RetryPolicy = { baseDelayMs: 5, maxDelayMs: 50, deadlineMs: 20_000 };
const slowTimeouts: CallTimeouts = { idleMs: 10_000, totalMs: 20_000 };

type Vendor = 'anthropic' | 'responses' | 'chat';
/** A fault as each vendor's wire format sends it. */
type Fault = { anthropic: AnthropicReply; openai: OpenAIReply; serverWaitMs?: number };

const answer = 'The fix is in place.';
const ok: Fault = {
  anthropic: { content: [{ type: 'text', text: answer }] },
  openai: { text: answer },
};
const faults: Record<string, Fault> = {
  '529 overloaded with retry-after': {
    anthropic: {
      kind: 'error',
      status: 529,
      type: 'overloaded_error',
      message: 'Overloaded',
      headers: { 'retry-after': '0' },
    },
    openai: {
      kind: 'error',
      status: 503,
      message: 'The engine is currently overloaded',
      headers: { 'retry-after': '0' },
    },
  },
  '429 rate limited with retry-after-ms': {
    anthropic: {
      kind: 'error',
      status: 429,
      type: 'rate_limit_error',
      message: 'Number of requests has exceeded your rate limit',
      headers: { 'retry-after-ms': '20' },
    },
    openai: {
      kind: 'error',
      status: 429,
      message: 'Rate limit reached for requests',
      type: 'requests',
      code: 'rate_limit_exceeded',
      headers: { 'retry-after-ms': '20' },
    },
    serverWaitMs: 20,
  },
  '500 server error': {
    anthropic: { kind: 'error', status: 500, type: 'api_error', message: 'Internal server error' },
    openai: { kind: 'error', status: 500, message: 'The server had an error while processing your request.' },
  },
  'an error event mid-stream': {
    anthropic: {
      content: [
        { type: 'text', text: 'I will change' },
        { type: 'text', text: 'x' },
      ],
      midStreamError: 'overloaded_error',
    },
    openai: { text: 'I will change the handler', midStreamError: 'server_error' },
  },
  'a stream cut before its closing event': {
    anthropic: { content: [{ type: 'text', text: 'The fix is in pla' }], fault: 'cut' },
    openai: { text: 'The fix is in pla', fault: 'cut' },
  },
  'a connection dropped after the request was accepted': {
    anthropic: { kind: 'drop' },
    openai: { kind: 'drop' },
  },
  'a connection dropped mid-answer': {
    anthropic: { content: [{ type: 'text', text: 'The fix is in pla' }], fault: 'drop' },
    openai: { text: 'The fix is in pla', fault: 'drop' },
  },
};

const closing: Record<Vendor, string> = {
  anthropic: 'message_stop',
  responses: 'response.completed',
  chat: 'finish_reason',
};
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** A provider of `vendor` against its loopback fake, answering `replies` in turn (the last one repeats). */
async function provider(
  vendor: Vendor,
  replies: Fault[],
  settings: { maxRetries?: number; timeouts?: CallTimeouts } = {},
): Promise<{ model: ModelProvider; calls: () => number; rejections: () => string[] }> {
  const pick = (i: number) => replies[Math.min(i, replies.length - 1)]!;
  const common = { retry: quick, timeouts: settings.timeouts ?? slowTimeouts, maxRetries: settings.maxRetries, log };
  if (vendor === 'anthropic') {
    const fake = await startFakeAnthropic({ script: (_b, i) => pick(i).anthropic });
    close = fake.close;
    const model = createAnthropicProvider({
      ...common,
      model: 'claude-sonnet-4-6',
      apiKey: 'test-anthropic-key',
      baseUrl: fake.baseUrl,
    });
    return { model, calls: () => fake.calls.length, rejections: () => fake.rejections };
  }
  const fake = await startFakeOpenAI({ [vendor]: (_b: unknown, i: number) => pick(i).openai });
  close = fake.close;
  const options = { ...common, model: 'gpt-5.1-codex', apiKey: 'test-openai-key', baseUrl: fake.baseUrl };
  const model = vendor === 'responses' ? createOpenAIResponsesProvider(options) : createOpenAIChatProvider(options);
  return { model, calls: () => fake.calls.length, rejections: () => fake.rejections };
}

function request(extra: Partial<TurnRequest> = {}): TurnRequest {
  return {
    system: 'You are Patchbay.',
    messages: [{ role: 'user', content: 'fix the handler' }],
    tools: [],
    maxTokens: 1024,
    signal: AbortSignal.timeout(30_000),
    ...extra,
  };
}

describe.each(['anthropic', 'responses', 'chat'] as const)('%s: a transient fault is retried', (vendor) => {
  for (const [name, fault] of Object.entries(faults)) {
    it(`${name}, twice, then the answer`, async () => {
      const fake = await provider(vendor, [fault, fault, ok]);
      const notices: RetryNotice[] = [];
      const result = await fake.model.runTurn(request({ onRetry: (n) => void notices.push(n) }));
      expect(result).toMatchObject({ stopReason: 'end_turn', content: answer });
      expect(fake.calls()).toBe(3);
      expect(notices.map((n) => [n.retry, n.error.retryable])).toEqual([
        [1, true],
        [2, true],
      ]);
      // The wait the server asked for, not the policy's own (a few milliseconds here).
      for (const n of notices) expect(n.delayMs).toBeGreaterThanOrEqual(fault.serverWaitMs ?? 0);
      expect(fake.rejections()).toEqual([]);
    });
  }

  it('a stream cut before its closing event is an error, never the answer', async () => {
    const fake = await provider(vendor, [faults['a stream cut before its closing event']!], { maxRetries: 0 });
    const result = await fake.model.runTurn(request());
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ code: 'model_stream_cut', retryable: true });
    expect(result.error?.message).toContain(`no ${closing[vendor]}`);
  });

  it('a hung server is given up on after the idle timeout and tried again', async () => {
    const fake = await provider(vendor, [{ anthropic: { kind: 'hang' }, openai: { kind: 'hang' } }, ok], {
      timeouts: { idleMs: 300, totalMs: 10_000 },
    });
    const notices: RetryNotice[] = [];
    const result = await fake.model.runTurn(request({ onRetry: (n) => void notices.push(n) }));
    expect(result).toMatchObject({ stopReason: 'end_turn', content: answer });
    expect(notices.map((n) => n.error)).toEqual([
      expect.objectContaining({ code: 'timeout', message: expect.stringMatching(/sent nothing for 0 s/) }),
    ]);
  });

  it('an answer that stalls mid-stream hits the idle timeout; a slow one the total', async () => {
    const stall: Fault = {
      anthropic: { content: [{ type: 'text', text: 'The fix is in pla' }], fault: 'stall' },
      openai: { text: 'The fix is in pla', fault: 'stall' },
    };
    const idle = await provider(vendor, [stall], { maxRetries: 0, timeouts: { idleMs: 300, totalMs: 10_000 } });
    expect((await idle.model.runTurn(request())).error?.message).toMatch(/sent nothing for/);
    await close?.();
    const total = await provider(vendor, [stall], { maxRetries: 0, timeouts: { idleMs: 10_000, totalMs: 300 } });
    expect((await total.model.runTurn(request())).error).toMatchObject({
      code: 'timeout',
      message: expect.stringMatching(/did not finish its answer within 0 s/),
      retryable: true,
    });
  });

  it('reads the retryable flag: a refused request is not tried again', async () => {
    const refused: Fault = {
      anthropic: { kind: 'error', status: 400, type: 'invalid_request_error', message: 'max_tokens: too large' },
      openai: { kind: 'error', status: 400, message: 'max_tokens is too large', type: 'invalid_request_error' },
    };
    const fake = await provider(vendor, [refused, ok]);
    const result = await fake.model.runTurn(request());
    expect(result.error).toMatchObject({ code: 'model_error', retryable: false });
    expect(fake.calls()).toBe(1);
  });

  it('gives up at the call deadline with a reason that says how long it tried', async () => {
    const fake = await provider(vendor, [faults['500 server error']!], {});
    const result = await fake.model.runTurn(request({ retryWithinMs: 100 }));
    expect(result.stopReason).toBe('error');
    expect(result.error?.message).toMatch(/\(gave up after \d+ tries over \d+ s\)$/);
    expect(fake.calls()).toBeGreaterThan(1);
  });
});
