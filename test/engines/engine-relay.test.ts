import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Step } from '../../src/core/run-log.ts';
import { type RunningEngineRelay, startEngineRelay } from '../../src/engines/engine-relay.ts';
import type { RelayRequest } from '../../src/engines/relay-lease.ts';
import { type AnthropicRequest, type FakeAnthropic, startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.ts';

const KEY = 'sk-ant-real-key';
const OPENAI_KEY = 'sk-openai-real-key';
const bash = (n: number) => ({ type: 'tool_use' as const, name: 'Bash', input: { command: `echo ${n}` } });

/**
 * The engine relay against the loopback Anthropic and OpenAI fakes, as an engine in a sandbox talks
 * to it: the run's token in, the real key out; usage metered into the log; refusals for a closed,
 * stopped or spent run, for a run past its token or tool-call limit, and for any API call the
 * engine's CLI does not make.
 */
describe('engine relay', () => {
  let anthropic: FakeAnthropic;
  let openai: FakeOpenAI;
  let relay: RunningEngineRelay;
  const steps: { sessionId: string; step: Step }[] = [];
  /** Every request the relay sent upstream, as `METHOD url`. */
  const forwarded: string[] = [];
  const warnings: string[] = [];

  beforeAll(async () => {
    anthropic = await startFakeAnthropic({
      apiKey: KEY,
      script: (body: AnthropicRequest) =>
        JSON.stringify(body.messages).includes('tools-case')
          ? { content: [bash(1), bash(2)], outputTokens: 10 }
          : { content: [{ type: 'text', text: 'hello' }], outputTokens: 100_000 },
    });
    openai = await startFakeOpenAI({
      apiKey: OPENAI_KEY,
      responses: () => ({ toolCalls: [{ name: 'exec_command', arguments: { cmd: 'ls' } }], outputTokens: 10 }),
    });
    relay = await startEngineRelay({
      upstreams: {
        anthropic: { baseUrl: anthropic.baseUrl, model: 'claude-sonnet-4-6', headers: { 'x-api-key': KEY } },
        openai: {
          baseUrl: openai.baseUrl.replace(/\/v1$/, ''),
          model: 'gpt-5.5',
          headers: { authorization: `Bearer ${OPENAI_KEY}` },
        },
      },
      runLog: {
        commitStep: async (sessionId, step) => {
          steps.push({ sessionId, step });
          return [];
        },
      },
      log: pino(
        { level: 'warn' },
        { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) },
      ),
      sandboxUrl: (url) => url,
      fetch: (url, init) => {
        forwarded.push(`${init?.method} ${String(url)}`);
        return fetch(url, init);
      },
    });
  });
  afterAll(async () => {
    await relay?.close();
    await anthropic?.close();
    await openai?.close();
  });

  const open = (request: Partial<RelayRequest> = {}) =>
    relay.open({
      sessionId: 's-1',
      engine: 'claude-code',
      api: 'anthropic',
      firstTurn: 0,
      maxCostUsd: 100,
      signal: new AbortController().signal,
      ...request,
    });

  const call = (
    baseUrl: string,
    token: string,
    options: { stream?: boolean; path?: string; method?: string; words?: string } = {},
  ) =>
    fetch(`${baseUrl}${options.path ?? '/v1/messages?beta=true'}`, {
      method: options.method ?? 'POST',
      headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      ...(options.method !== 'GET' && {
        body: JSON.stringify({
          model: 'claude-sonnet-4-6',
          max_tokens: 100,
          stream: options.stream ?? false,
          messages: [{ role: 'user', content: options.words ?? 'hi' }],
        }),
      }),
    });

  const responses = (baseUrl: string, token: string, path = '/v1/responses', method = 'POST') =>
    fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(method !== 'GET' && { body: JSON.stringify({ model: 'gpt-5.5', input: 'hi', stream: true }) }),
    });

  it('swaps the run token for the key, streams the answer through and meters its usage into the session', async () => {
    const lease = open({ firstTurn: 3 });
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

  it('refuses an unknown or closed token, a stopped run and a spent budget', async () => {
    const before = anthropic.calls.length;
    expect((await call(relay.url, 'pbrelay-made-up')).status).toBe(401);
    const closed = open();
    closed.close();
    expect((await call(relay.url, closed.access.token)).status).toBe(401);

    const stop = new AbortController();
    const stopped = open({ signal: stop.signal });
    stop.abort();
    const refused = await call(relay.url, stopped.access.token);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: 'Patchbay relay: the session was stopped' },
    });
    expect(anthropic.calls.length).toBe(before);

    // $1.50 a call against a $1 budget: the first is forwarded and spends it, the second is refused.
    const budget = open({ maxCostUsd: 1 });
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

  it("forwards only the API calls each engine's CLI makes: everything else is a logged 403, never sent upstream", async () => {
    const claude = open();
    const codex = open({ engine: 'codex', api: 'openai' });
    const opencode = open({ engine: 'opencode', api: 'anthropic' });
    const sent = forwarded.length;
    const refusals: [string, Promise<Response>][] = [
      ['POST /v1/files', call(relay.url, claude.access.token, { path: '/v1/files' })],
      ['GET /v1/messages', call(relay.url, claude.access.token, { method: 'GET' })],
      ['GET /v1/models', call(relay.url, claude.access.token, { path: '/v1/models', method: 'GET' })],
      ['POST /v1/messages/batches', call(relay.url, claude.access.token, { path: '/v1/messages/batches' })],
      ['POST /admin', call(relay.url, claude.access.token, { path: '/v1/../admin' })],
      ['POST /v1/responses', responses(relay.url, claude.access.token)],
      ['POST /v1/messages/count_tokens', call(relay.url, opencode.access.token, { path: '/v1/messages/count_tokens' })],
      ['POST /v1/chat/completions', responses(relay.url, codex.access.token, '/v1/chat/completions')],
      ['GET /v1/models', responses(relay.url, codex.access.token, '/v1/models', 'GET')],
      ['POST /v1/files', responses(relay.url, codex.access.token, '/v1/files')],
    ];
    for (const [what, pending] of refusals) {
      const res = await pending;
      expect({ what, status: res.status }).toEqual({ what, status: 403 });
      const error = ((await res.json()) as { error: { type: string; message: string } }).error;
      expect(error.type).toBe('permission_error');
      expect(error.message).toContain(`does not forward ${what}`);
    }
    expect(forwarded.length).toBe(sent);
    expect(warnings.filter((w) => w.includes('does not forward'))).toHaveLength(refusals.length);

    // What each CLI does call goes through.
    expect((await call(relay.url, claude.access.token)).status).toBe(200);
    expect((await call(relay.url, opencode.access.token, { path: '/v1/messages' })).status).toBe(200);
    const codexAnswer = await responses(relay.url, codex.access.token);
    expect(codexAnswer.status).toBe(200);
    await codexAnswer.text();
    expect(forwarded.slice(sent)).toEqual([
      `POST ${anthropic.baseUrl}/v1/messages?beta=true`,
      `POST ${anthropic.baseUrl}/v1/messages`,
      `POST ${openai.baseUrl}/responses`,
    ]);
    expect(openai.calls.at(-1)!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(openai.rejections).toEqual([]);
    for (const lease of [claude, codex, opencode]) lease.close();
  });

  it("stops forwarding once the run's metered tokens pass RUN_MAX_TOKENS, as the run's outcome", async () => {
    // About 100,000 tokens a call against a limit of 150,000: two are forwarded, the third is refused.
    const lease = open({ maxTokens: 150_000 });
    expect((await call(relay.url, lease.access.token)).status).toBe(200);
    expect(lease.stopped()).toBeUndefined();
    expect((await call(relay.url, lease.access.token, { stream: true })).status).toBe(200);
    const used = lease.spent().inputTokens + lease.spent().outputTokens;
    expect(used).toBeGreaterThan(150_000);
    const before = forwarded.length;
    const over = await call(relay.url, lease.access.token);
    expect(over.status).toBe(403);
    const message = `the run used ${used} tokens, over its limit of 150000`;
    expect(await over.json()).toEqual({
      type: 'error',
      error: { type: 'permission_error', message: `Patchbay relay stopped this run: ${message}` },
    });
    expect(lease.stopped()).toEqual({ kind: 'failed', code: 'budget_exhausted', message });
    expect(forwarded.length).toBe(before);
    lease.close();
  });

  it("counts the tool calls in the model's answers and stops at RUN_MAX_TOOL_CALLS", async () => {
    // Two tool_use blocks an answer (one whole message, one streamed) against a limit of three.
    const lease = open({ maxToolCalls: 3 });
    expect((await call(relay.url, lease.access.token, { words: 'tools-case' })).status).toBe(200);
    expect(lease.spent().toolCalls).toBe(2);
    expect(lease.stopped()).toBeUndefined();
    const streamed = await call(relay.url, lease.access.token, { words: 'tools-case', stream: true });
    await streamed.text();
    expect(lease.spent().toolCalls).toBe(4);
    const over = await call(relay.url, lease.access.token, { words: 'tools-case' });
    expect(over.status).toBe(403);
    expect(lease.stopped()).toEqual({
      kind: 'failed',
      code: 'budget_exhausted',
      message: 'the run made 4 tool calls, its limit',
    });
    lease.close();

    // Codex's function calls in the Responses stream count the same way.
    const codex = open({ engine: 'codex', api: 'openai', maxToolCalls: 1 });
    await (await responses(relay.url, codex.access.token)).text();
    expect(codex.spent().toolCalls).toBe(1);
    expect((await responses(relay.url, codex.access.token)).status).toBe(403);
    expect(codex.stopped()?.message).toBe('the run made 1 tool calls, its limit');
    codex.close();
    expect(anthropic.rejections).toEqual([]);
    expect(openai.rejections).toEqual([]);
  });
});
