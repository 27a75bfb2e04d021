import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Step } from '../../src/core/run-log.ts';
import { type RunningEngineRelay, startEngineRelay } from '../../src/engines/engine-relay.ts';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/fake-anthropic.ts';

const KEY = 'sk-ant-real-key';

/**
 * The engine relay against the loopback Anthropic fake, as an engine in a sandbox talks to it: the
 * run's token in, the real key out; usage metered into the log; refusals for a closed, stopped or
 * spent run and for paths outside the provider's API.
 */
describe('engine relay', () => {
  let anthropic: FakeAnthropic;
  let relay: RunningEngineRelay;
  const steps: { sessionId: string; step: Step }[] = [];

  beforeAll(async () => {
    anthropic = await startFakeAnthropic({
      apiKey: KEY,
      script: () => ({ content: [{ type: 'text', text: 'hello' }], outputTokens: 100_000 }),
    });
    relay = await startEngineRelay({
      upstreams: {
        anthropic: { baseUrl: anthropic.baseUrl, model: 'claude-sonnet-4-6', headers: { 'x-api-key': KEY } },
      },
      runLog: {
        commitStep: async (sessionId, step) => {
          steps.push({ sessionId, step });
          return [];
        },
      },
      log: pino({ level: 'silent' }),
      sandboxUrl: (url) => url,
    });
  });
  afterAll(async () => {
    await relay?.close();
    await anthropic?.close();
  });

  const call = (baseUrl: string, token: string, options: { stream?: boolean; path?: string } = {}) =>
    fetch(`${baseUrl}${options.path ?? '/v1/messages?beta=true'}`, {
      method: 'POST',
      headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-6',
        max_tokens: 100,
        stream: options.stream ?? false,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });

  it('swaps the run token for the key, streams the answer through and meters its usage into the session', async () => {
    const lease = relay.open({
      sessionId: 's-1',
      api: 'anthropic',
      firstTurn: 3,
      maxCostUsd: 100,
      signal: new AbortController().signal,
    });
    expect(lease.access.token).toMatch(/^pbrelay-/);
    expect(lease.access.token).not.toContain(KEY);
    const res = await call(lease.access.baseUrl, lease.access.token, { stream: true });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain('event: message_stop');
    const seen = anthropic.calls.at(-1)!;
    expect(seen.headers['x-api-key']).toBe(KEY);
    expect(JSON.stringify(seen.headers)).not.toContain(lease.access.token);
    const usage = steps.at(-1)!;
    expect(usage.sessionId).toBe('s-1');
    expect(usage.step.events).toEqual([
      {
        event: expect.objectContaining({ type: 'usage', turn: 3, model: 'claude-sonnet-4-6', outputTokens: 100_000 }),
        dedupeKey: expect.stringMatching(/^usage:relay:/),
      },
    ]);
    expect(usage.step.usage?.outputTokens).toBe(100_000);
    expect(lease.spent().costUsd).toBeCloseTo(1.5, 1);
    lease.close();
  });

  it('refuses an unknown or closed token, a stopped run, a spent budget and paths outside /v1/', async () => {
    const before = anthropic.calls.length;
    expect((await call(relay.url, 'pbrelay-made-up')).status).toBe(401);
    const closed = relay.open({
      sessionId: 's-2',
      api: 'anthropic',
      firstTurn: 0,
      maxCostUsd: 100,
      signal: new AbortController().signal,
    });
    closed.close();
    expect((await call(relay.url, closed.access.token)).status).toBe(401);

    const stop = new AbortController();
    const stopped = relay.open({
      sessionId: 's-3',
      api: 'anthropic',
      firstTurn: 0,
      maxCostUsd: 100,
      signal: stop.signal,
    });
    stop.abort();
    const refused = await call(relay.url, stopped.access.token);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: 'Patchbay relay: the session was stopped' },
    });

    const outside = relay.open({
      sessionId: 's-4',
      api: 'anthropic',
      firstTurn: 0,
      maxCostUsd: 100,
      signal: new AbortController().signal,
    });
    expect((await call(relay.url, outside.access.token, { path: '/admin' })).status).toBe(404);
    expect((await call(relay.url, outside.access.token, { path: '/v1/../admin' })).status).toBe(404);
    expect(anthropic.calls.length).toBe(before);

    // $1.50 a call against a $1 budget: the first is forwarded and spends it, the second is refused.
    const budget = relay.open({
      sessionId: 's-5',
      api: 'anthropic',
      firstTurn: 0,
      maxCostUsd: 1,
      signal: new AbortController().signal,
    });
    expect((await call(relay.url, budget.access.token)).status).toBe(200);
    const spent = await call(relay.url, budget.access.token);
    expect(spent.status).toBe(403);
    expect(((await spent.json()) as { error: { message: string } }).error.message).toMatch(
      /spent \$1\.50 of its \$1\.00 budget/,
    );
    expect(budget.stopped()).toMatchObject({
      kind: 'failed',
      code: 'budget_exhausted',
      budget: { kind: 'cost', limit: 1 },
    });
    expect(anthropic.calls.length).toBe(before + 1);
    expect(anthropic.rejections).toEqual([]);
  });
});
