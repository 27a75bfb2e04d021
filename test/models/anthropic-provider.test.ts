import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createAnthropicProvider } from '../../src/models/anthropic-provider.ts';
import type { ModelMessage, ToolSpec, TurnRequest } from '../../src/models/model-provider.ts';
import { startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import type { AnthropicReply, FakeAnthropic } from '../fakes/fake-anthropic.ts';

const log = pino({ level: 'silent' });
const tools: ToolSpec[] = [
  {
    name: 'read_file',
    description: 'Read a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'run_command',
    description: 'Run a command',
    inputSchema: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
  },
];
const fixtures = 'node_modules/@ai-sdk/anthropic/src/__fixtures__';

let fake: FakeAnthropic | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(
  script: (callIndex: number) => AnthropicReply,
  extra: { maxRetries?: number; apiKey?: string } = {},
) {
  fake = await startFakeAnthropic({ script: (_req, i) => script(i) });
  const provider = createAnthropicProvider({
    model: 'claude-sonnet-4-6',
    apiKey: extra.apiKey ?? 'test-anthropic-key',
    baseUrl: fake.baseUrl,
    maxRetries: extra.maxRetries ?? 0,
    log,
  });
  return { provider, fake };
}

function request(messages: ModelMessage[], extra: Partial<TurnRequest> = {}): TurnRequest {
  return {
    system: 'You are Patchbay.',
    messages,
    tools,
    maxTokens: 1024,
    signal: AbortSignal.timeout(10_000),
    ...extra,
  };
}

describe('anthropic provider', () => {
  it('streams text, assembles multi-tool arguments split at awkward places, maps stop_reason', async () => {
    const { provider } = await setup(() => ({
      content: [
        { type: 'text', text: 'Reading both files "now" — ünïcode' },
        { type: 'tool_use', name: 'read_file', input: { path: 'src/a "quoted".ts' } },
        { type: 'tool_use', name: 'run_command', input: { cmd: 'echo \\n\u00e9', n: 12.5 } },
      ],
      argChunk: 1,
    }));
    const deltas: string[] = [];
    const result = await provider.runTurn(
      request([{ role: 'user', content: 'go' }], { onDelta: (d) => deltas.push(d) }),
    );
    expect(result.stopReason).toBe('tool_use');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('Reading both files "now" — ünïcode');
    expect(result.content).toBe('Reading both files "now" — ünïcode');
    expect(result.toolCalls.map((c) => [c.name, c.input])).toEqual([
      ['read_file', { path: 'src/a "quoted".ts' }],
      ['run_command', { cmd: 'echo \\n\u00e9', n: 12.5 }],
    ]);
    expect(result.toolCalls[0]?.id).toMatch(/^toolu_/);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
  });

  it('sends Bearer auth and anthropic-version as SDK 1.14 does, and a transcript the API accepts', async () => {
    const { provider, fake } = await setup((i) =>
      i === 0
        ? {
            content: [
              { type: 'tool_use', name: 'read_file', input: { path: 'a' } },
              { type: 'tool_use', name: 'read_file', input: { path: 'b' } },
            ],
          }
        : { content: [{ type: 'text', text: 'done' }] },
    );
    const first = await provider.runTurn(request([{ role: 'user', content: 'read a and b' }]));
    const messages: ModelMessage[] = [
      { role: 'user', content: 'read a and b' },
      { role: 'assistant', content: first.content, toolCalls: first.toolCalls },
      ...first.toolCalls.map((c) => ({
        role: 'tool' as const,
        toolCallId: c.id,
        name: c.name,
        content: `contents of ${String((c.input as { path: string }).path)}`,
        isError: false,
      })),
      { role: 'user', content: 'also, be quick' },
    ];
    const second = await provider.runTurn(request(messages));
    expect(second).toMatchObject({ stopReason: 'end_turn', content: 'done' });
    expect(fake.rejections).toEqual([]);
    const call = fake.calls[1]!;
    expect(call.headers.authorization).toBe('Bearer test-anthropic-key');
    expect(call.headers['anthropic-version']).toBe('2026-10-21');
    const last = call.body.messages.at(-1)!;
    expect(Array.isArray(last.content) && last.content.map((b) => b.type)).toEqual([
      'tool_result',
      'tool_result',
      'text',
    ]);
  });

  it('places cache breakpoints on system, tools and the newest transcript prefix, and reports cache reads', async () => {
    const { provider, fake } = await setup(() => ({ content: [{ type: 'text', text: 'ok' }] }));
    const history: ModelMessage[] = [{ role: 'user', content: 'x'.repeat(4000) }];
    await provider.runTurn(request(history));
    history.push({ role: 'assistant', content: 'ok' }, { role: 'user', content: 'y'.repeat(400) });
    const second = await provider.runTurn(request(history));
    const body = fake.calls[1]!.body;
    expect(Array.isArray(body.system) && body.system[0]?.cache_control).toEqual({ type: 'ephemeral' });
    expect(body.tools?.at(-1)?.cache_control).toEqual({ type: 'ephemeral' });
    expect(body.tools?.[0]?.cache_control).toBeUndefined();
    const lastBlock = (body.messages.at(-1)!.content as Array<{ cache_control?: unknown }>).at(-1);
    expect(lastBlock?.cache_control).toEqual({ type: 'ephemeral' });
    expect(second.usage.cacheReadTokens).toBeGreaterThan(1000);
    expect(second.usage.inputTokens).toBeGreaterThan(second.usage.cacheReadTokens);
  });

  it('replays a recorded real stream (anthropic-tool-no-args.chunks.txt) into one turn', async () => {
    const lines = readFileSync(`${fixtures}/anthropic-tool-no-args.chunks.txt`, 'utf8').trim().split('\n');
    const { provider } = await setup(() => ({ kind: 'recorded', lines }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'update' }]));
    expect(result.stopReason).toBe('tool_use');
    expect(result.content).toBe("I'll update the issue list for you.");
    expect(result.toolCalls).toEqual([{ id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP', name: 'updateIssueList', input: {} }]);
    expect(result.usage.inputTokens).toBe(565);
  });

  it('replays recorded anthropic-json-tool.1.chunks.txt with real partial_json fragments', async () => {
    const lines = readFileSync(`${fixtures}/anthropic-json-tool.1.chunks.txt`, 'utf8').trim().split('\n');
    const { provider } = await setup(() => ({ kind: 'recorded', lines }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'weather' }]));
    expect(result.toolCalls[0]?.input).toEqual({
      elements: [{ location: 'San Francisco', temperature: 58, condition: 'sunny' }],
    });
  });

  it('retries a 429 honouring retry-after-ms, then succeeds', async () => {
    const { provider, fake } = await setup(
      (i) =>
        i === 0
          ? {
              kind: 'error',
              status: 429,
              type: 'rate_limit_error',
              message: 'slow down',
              headers: { 'retry-after-ms': '300' },
            }
          : { content: [{ type: 'text', text: 'hi' }] },
      { maxRetries: 2 },
    );
    const started = Date.now();
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result).toMatchObject({ stopReason: 'end_turn', content: 'hi' });
    expect(fake.calls).toHaveLength(2);
    // The SDK's own retries are off (its count stays 0): the second call is Patchbay's retry.
    expect(fake.calls.map((c) => c.headers['x-stainless-retry-count'])).toEqual(['0', '0']);
    // Lower bound only: the client waited at least as long as the server asked.
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('ends with a coded overload error after 529s exhaust the retries', async () => {
    const { provider, fake } = await setup(
      () => ({
        kind: 'error',
        status: 529,
        type: 'overloaded_error',
        message: 'Overloaded',
        headers: { 'retry-after-ms': '10' },
      }),
      { maxRetries: 2 },
    );
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(fake.calls).toHaveLength(3);
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ code: 'model_overloaded', retryable: true });
    expect(result.error?.message).toContain('Anthropic is overloaded');
  });

  it('reports a mid-stream overloaded error as data', async () => {
    const { provider } = await setup(() => ({
      content: [
        { type: 'text', text: 'partial' },
        { type: 'text', text: 'never' },
      ],
      midStreamError: 'overloaded_error',
    }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result.stopReason).toBe('error');
    expect(result.error?.code).toBe('model_overloaded');
  });

  it('turns a wrong key into "Anthropic rejected the API key"', async () => {
    const { provider } = await setup(() => ({ content: [{ type: 'text', text: 'x' }] }), { apiKey: 'wrong' });
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ code: 'model_auth', retryable: false });
    expect(result.error?.message).toMatch(/^Anthropic rejected the API key/);
  });

  it('turns an unknown model into "model X does not exist"', async () => {
    const { provider } = await setup(() => ({
      kind: 'error',
      status: 404,
      type: 'not_found_error',
      message: 'model: claude-sonnet-4-6',
    }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result.error?.code).toBe('model_not_found');
    expect(result.error?.message).toMatch(/^model claude-sonnet-4-6 does not exist/);
  });

  it('rejects malformed JSON in tool arguments as a retryable bad response', async () => {
    const { provider } = await setup(() => ({
      content: [{ type: 'tool_use', name: 'run_command', input: {} }],
      rawArguments: { 0: ['{"cmd": "ls', ' -la"'] },
    }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result.stopReason).toBe('error');
    expect(result.error).toMatchObject({ code: 'model_bad_response', retryable: true });
    expect(result.error?.message).toContain('run_command');
  });

  it('ends as aborted within a second when the signal fires mid-stream', async () => {
    const { provider } = await setup(() => ({ content: [{ type: 'text', text: 'streaming forever' }], stall: true }));
    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = provider.runTurn(
      request([{ role: 'user', content: 'hi' }], {
        signal: controller.signal,
        onDelta: (d) => {
          deltas.push(d);
          controller.abort();
        },
      }),
    );
    const result = await pending;
    expect(result.stopReason).toBe('aborted');
    expect(deltas.length).toBeGreaterThan(0);
  });

  it('ends as aborted, not error, when the signal fires while waiting out a retry-after', async () => {
    const { provider, fake } = await setup(
      () => ({
        kind: 'error',
        status: 429,
        type: 'rate_limit_error',
        message: 'slow down',
        headers: { 'retry-after-ms': '30000' },
      }),
      { maxRetries: 2 },
    );
    const result = await provider.runTurn(
      request([{ role: 'user', content: 'hi' }], { signal: AbortSignal.timeout(200) }),
    );
    expect(result.stopReason).toBe('aborted');
    expect(fake.calls).toHaveLength(1);
  });

  it('reports a base URL that does not answer as one clear error', async () => {
    const provider = createAnthropicProvider({
      model: 'claude-sonnet-4-6',
      apiKey: 'k',
      baseUrl: 'http://127.0.0.1:9',
      maxRetries: 0,
      log,
    });
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result.error).toMatchObject({ code: 'model_unavailable' });
    expect(result.error?.message).toMatch(/^Could not reach Anthropic at http:\/\/127\.0\.0\.1:9/);
  });
});
