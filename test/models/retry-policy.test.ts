import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { RetryNotice, TurnError, TurnRequest, TurnResult } from '../../src/models/model-provider.ts';
import { durationMs, headerLookup, retryAfterMs } from '../../src/models/retry-after.ts';
import { decideRetry, type RetryPolicy } from '../../src/models/retry-policy.ts';
import { type RetryClock, retryTurn } from '../../src/models/retrying-turn.ts';

const policy: RetryPolicy = { baseDelayMs: 1_000, maxDelayMs: 30_000, deadlineMs: 600_000 };
const overloaded: TurnError = { code: 'model_overloaded', message: 'Anthropic is overloaded', retryable: true };
const now = Date.parse('2026-12-03T18:00:00Z');

describe('retry decisions', () => {
  const cases: Array<{
    name: string;
    error?: TurnError;
    retries?: number;
    elapsedMs?: number;
    remainingMs?: number;
    random?: number;
    policy?: Partial<RetryPolicy>;
    expected: ReturnType<typeof decideRetry>;
  }> = [
    { name: 'first retry, lowest jitter: half the base', random: 0, expected: { retry: true, delayMs: 500 } },
    { name: 'first retry, highest jitter: the base', random: 0.999_999, expected: { retry: true, delayMs: 1_000 } },
    { name: 'third retry doubles twice', retries: 2, random: 0.5, expected: { retry: true, delayMs: 3_000 } },
    { name: 'backoff is capped', retries: 12, random: 0, expected: { retry: true, delayMs: 15_000 } },
    {
      name: "the server's wait is honoured, plus at most a tenth",
      error: { ...overloaded, retryAfterMs: 4_000 },
      retries: 5,
      random: 0.5,
      expected: { retry: true, delayMs: 4_200 },
    },
    {
      name: 'the jitter on a long server wait is at most a second',
      error: { ...overloaded, retryAfterMs: 120_000 },
      random: 0.999_999,
      expected: { retry: true, delayMs: 121_000 },
    },
    {
      name: 'a server wait of zero is taken as is',
      error: { ...overloaded, retryAfterMs: 0 },
      random: 0.9,
      expected: { retry: true, delayMs: 0 },
    },
    {
      name: 'not retryable: no retry',
      error: { code: 'model_auth', message: 'no', retryable: false },
      expected: { retry: false, reason: 'not-retryable' },
    },
    {
      name: 'MODEL_MAX_RETRIES reached',
      retries: 3,
      policy: { maxRetries: 3 },
      expected: { retry: false, reason: 'max-retries' },
    },
    { name: 'MODEL_MAX_RETRIES=0: none', policy: { maxRetries: 0 }, expected: { retry: false, reason: 'max-retries' } },
    {
      name: 'a malformed answer is tried again twice, not until the deadline',
      error: { code: 'model_bad_response', message: 'malformed JSON', retryable: true },
      retries: 2,
      expected: { retry: false, reason: 'max-retries' },
    },
    {
      name: 'a malformed answer, first retry',
      error: { code: 'model_bad_response', message: 'malformed JSON', retryable: true },
      expected: { retry: true, delayMs: 500 },
    },
    {
      name: 'a wait that would end past the call deadline is not started',
      elapsedMs: 599_600,
      random: 0,
      expected: { retry: false, reason: 'deadline' },
    },
    {
      name: 'a wait that ends exactly at the deadline is started',
      elapsedMs: 599_500,
      random: 0,
      expected: { retry: true, delayMs: 500 },
    },
    {
      name: "the run's remaining time bounds it too",
      error: { ...overloaded, retryAfterMs: 60_000 },
      remainingMs: 30_000,
      random: 0,
      expected: { retry: false, reason: 'deadline' },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(
        decideRetry({
          policy: { ...policy, ...c.policy },
          error: c.error ?? overloaded,
          retries: c.retries ?? 0,
          elapsedMs: c.elapsedMs ?? 0,
          remainingMs: c.remainingMs,
          random: c.random ?? 0,
        }),
      ).toEqual(c.expected);
    });
  }
});

describe('the wait a response asks for', () => {
  const cases: Array<[string, Record<string, string>, number | undefined]> = [
    ['nothing said', {}, undefined],
    ['retry-after-ms', { 'retry-after-ms': '250.4' }, 251],
    ['retry-after in seconds', { 'retry-after': '3' }, 3_000],
    ['retry-after as a fraction', { 'retry-after': '0.5' }, 500],
    ['retry-after-ms wins over retry-after', { 'retry-after-ms': '100', 'retry-after': '30' }, 100],
    ['retry-after as an HTTP date', { 'retry-after': 'Thu, 03 Dec 2026 18:00:07 GMT' }, 7_000],
    ['an HTTP date in the past: at once', { 'retry-after': 'Thu, 03 Dec 2026 17:59:00 GMT' }, 0],
    ['a negative retry-after is ignored', { 'retry-after': '-5' }, undefined],
    ['garbage is ignored', { 'retry-after': 'soon' }, undefined],
    [
      "Anthropic: the spent window's reset",
      {
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '2026-12-03T18:00:12Z',
        'anthropic-ratelimit-tokens-remaining': '9000',
        'anthropic-ratelimit-tokens-reset': '2026-12-03T18:00:50Z',
      },
      12_000,
    ],
    [
      'Anthropic: with two spent, the later reset',
      {
        'anthropic-ratelimit-input-tokens-remaining': '0',
        'anthropic-ratelimit-input-tokens-reset': '2026-12-03T18:00:20Z',
        'anthropic-ratelimit-output-tokens-remaining': '0',
        'anthropic-ratelimit-output-tokens-reset': '2026-12-03T18:00:05Z',
      },
      20_000,
    ],
    [
      'Anthropic: retry-after wins over the windows',
      {
        'retry-after': '2',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '2026-12-03T18:00:12Z',
      },
      2_000,
    ],
    [
      'Anthropic: no window spent, no wait',
      { 'anthropic-ratelimit-requests-remaining': '4', 'anthropic-ratelimit-requests-reset': '2026-12-03T18:00:12Z' },
      undefined,
    ],
    [
      'OpenAI: the spent window as a duration',
      {
        'x-ratelimit-remaining-requests': '3',
        'x-ratelimit-reset-requests': '12ms',
        'x-ratelimit-remaining-tokens': '0',
        'x-ratelimit-reset-tokens': '6m0s',
      },
      360_000,
    ],
    ['OpenAI: fractional seconds', { 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '1.5s' }, 1_500],
  ];
  for (const [name, headers, expected] of cases) {
    it(name, () => {
      expect(retryAfterMs(headerLookup(headers), now)).toBe(expected);
      expect(retryAfterMs(new Headers(headers), now)).toBe(expected);
    });
  }

  it('reads Go-style durations as OpenAI writes them', () => {
    expect([durationMs('1h2m3.5s'), durationMs('20ms'), durationMs('7'), durationMs('1x'), durationMs('')]).toEqual([
      3_723_500,
      20,
      7_000,
      undefined,
      undefined,
    ]);
  });
});

describe('a call tried again', () => {
  const log = pino({ level: 'silent' });
  const failed = (error: TurnError): TurnResult => ({
    toolCalls: [],
    stopReason: 'error',
    usage: { inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 },
    error,
  });
  const ok: TurnResult = {
    content: 'done',
    toolCalls: [],
    stopReason: 'end_turn',
    usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 },
  };
  /** A clock whose sleeps pass at once and are recorded. */
  const fakeClock = () => {
    let t = 0;
    const slept: number[] = [];
    const clock: RetryClock = {
      now: () => t,
      random: () => 0,
      sleep: async (ms, signal) => {
        if (signal.aborted) throw signal.reason;
        slept.push(ms);
        t += ms;
      },
    };
    return { clock, slept, advance: (ms: number) => (t += ms) };
  };
  const request = (extra: Partial<TurnRequest> = {}): TurnRequest => ({
    system: '',
    messages: [{ role: 'user', content: 'hi' }],
    tools: [],
    maxTokens: 100,
    signal: new AbortController().signal,
    ...extra,
  });

  it("waits as the server says, announces each wait, and counts the failed tries' tokens", async () => {
    const { clock, slept } = fakeClock();
    const replies = [failed({ ...overloaded, retryAfterMs: 2_000 }), failed(overloaded), ok];
    const notices: RetryNotice[] = [];
    const result = await retryTurn(
      request({ onRetry: (n) => void notices.push(n) }),
      { policy, log, clock },
      async () => replies.shift()!,
    );
    expect(result).toMatchObject({ stopReason: 'end_turn', content: 'done' });
    expect(slept).toEqual([2_000, 1_000]);
    expect(notices.map((n) => [n.retry, n.delayMs, n.error.code])).toEqual([
      [1, 2_000, 'model_overloaded'],
      [2, 1_000, 'model_overloaded'],
    ]);
    expect(result.usage).toMatchObject({ inputTokens: 30, outputTokens: 7 });
  });

  it('reads the retryable flag: a refused key is not tried again', async () => {
    const { clock, slept } = fakeClock();
    let calls = 0;
    const result = await retryTurn(request(), { policy, log, clock }, async () => {
      calls++;
      return failed({ code: 'model_auth', message: 'Anthropic rejected the API key', retryable: false });
    });
    expect([calls, slept, result.error?.message]).toEqual([1, [], 'Anthropic rejected the API key']);
  });

  it('gives up at the deadline and says how long it tried', async () => {
    const { clock, slept } = fakeClock();
    const result = await retryTurn(request(), { policy: { ...policy, deadlineMs: 10_000 }, log, clock }, async () =>
      failed(overloaded),
    );
    // 500 + 1000 + 2000 + 4000 = 7500; the next wait (8000) would end past 10 s.
    expect(slept).toEqual([500, 1_000, 2_000, 4_000]);
    expect(result.error).toMatchObject({ code: 'model_overloaded', retryable: true });
    expect(result.error?.message).toBe('Anthropic is overloaded (gave up after 5 tries over 8 s)');
  });

  it("stops within the run's remaining time", async () => {
    const { clock, slept } = fakeClock();
    await retryTurn(request({ retryWithinMs: 2_000 }), { policy, log, clock }, async () => failed(overloaded));
    expect(slept).toEqual([500, 1_000]);
  });

  it('ends as aborted when the run is stopped during a wait', async () => {
    const { clock } = fakeClock();
    const controller = new AbortController();
    const result = await retryTurn(
      request({ signal: controller.signal, onRetry: () => controller.abort() }),
      { policy, log, clock },
      async () => failed(overloaded),
    );
    expect(result.stopReason).toBe('aborted');
  });
});
