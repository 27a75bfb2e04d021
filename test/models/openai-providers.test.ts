import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createOpenAIResponsesProvider } from '../../src/models/openai-responses-provider.ts';
import { createOpenAIChatProvider } from '../../src/models/openai-chat-provider.ts';
import type { ModelMessage, ModelProvider, ToolSpec, TurnRequest } from '../../src/models/model-provider.ts';
import { startFakeOpenAI } from '../fakes/fake-openai.ts';
import type { FakeOpenAI, OpenAIScript } from '../fakes/fake-openai.ts';

const log = pino({ level: 'silent' });
const tools: ToolSpec[] = [
  {
    name: 'calculator',
    description: 'Calculate',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' }, op: { type: 'string' } },
    },
  },
  {
    name: 'read_file',
    description: 'Read a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  },
];

let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

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

type Kind = 'responses' | 'chat';
async function setup(
  kind: Kind,
  script: OpenAIScript,
  extra: { maxRetries?: number; apiKey?: string | undefined; serverKey?: string | null } = {},
) {
  fake = await startFakeOpenAI({ [kind]: script, apiKey: extra.serverKey });
  const common = {
    model: 'gpt-5.1-codex',
    apiKey: 'apiKey' in extra ? extra.apiKey : 'test-openai-key',
    baseUrl: fake.baseUrl,
    maxRetries: extra.maxRetries ?? 0,
    log,
  };
  const provider: ModelProvider =
    kind === 'responses' ? createOpenAIResponsesProvider(common) : createOpenAIChatProvider(common);
  return { provider, fake };
}

/** The OpenAI fixture concatenates four recorded streams; each ends at response.completed. */
function recordedStreams(): string[][] {
  const lines = readFileSync(
    'node_modules/@ai-sdk/openai/src/responses/__fixtures__/openai-reasoning-encrypted-content.1.chunks.txt',
    'utf8',
  )
    .trim()
    .split('\n');
  const streams: string[][] = [[]];
  for (const line of lines) {
    streams.at(-1)!.push(line);
    if ((JSON.parse(line) as { type: string }).type === 'response.completed') streams.push([]);
  }
  return streams.filter((s) => s.length > 0);
}

describe('openai responses provider', () => {
  it('replays the recorded reasoning + function_call stream and keeps the reasoning item for the next turn', async () => {
    const streams = recordedStreams();
    expect(streams).toHaveLength(4);
    const { provider } = await setup('responses', (_b, i) => ({ kind: 'recorded', lines: streams[i]! }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'compute (12+7)*3*10' }]));
    expect(result.stopReason).toBe('tool_use');
    expect(result.toolCalls).toEqual([
      { id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', name: 'calculator', input: { a: 12, b: 7, op: 'add' } },
    ]);
    const state = result.providerState as { items: Array<{ type: string; encrypted_content?: string }> };
    expect(state.items.map((i) => i.type)).toEqual(['reasoning', 'function_call']);
    expect(state.items[0]?.encrypted_content).toMatch(/^gAAAA/);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    const last = await provider.runTurn(request([{ role: 'user', content: 'x' }]));
    expect(last.stopReason).toBe('tool_use');
  });

  it('sends reasoning items back in front of their function calls (the fake refuses otherwise)', async () => {
    const { provider, fake } = await setup('responses', (_b, i) =>
      i === 0
        ? {
            reasoning: 'I should read both',
            toolCalls: [
              { name: 'read_file', arguments: { path: 'a' } },
              { name: 'read_file', arguments: { path: 'b' } },
            ],
            argChunk: 2,
          }
        : { text: 'Both read.' },
    );
    const first = await provider.runTurn(request([{ role: 'user', content: 'read a and b' }]));
    expect(first.toolCalls.map((c) => c.input)).toEqual([{ path: 'a' }, { path: 'b' }]);
    const tail: ModelMessage[] = first.toolCalls.map((c) => ({
      role: 'tool',
      toolCallId: c.id,
      name: c.name,
      content: 'ok',
      isError: false,
    }));
    const withState = await provider.runTurn(
      request([
        { role: 'user', content: 'read a and b' },
        { role: 'assistant', toolCalls: first.toolCalls, providerState: first.providerState },
        ...tail,
      ]),
    );
    expect(withState).toMatchObject({ stopReason: 'end_turn', content: 'Both read.' });
    const input = fake.calls[1]!.body.input as Array<{ type: string }>;
    expect(input.map((i) => i.type)).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
    ]);
    // A call replayed by its item id without the reasoning that produced it: the API (and the fake) refuse.
    const state = first.providerState as { items: Array<{ type: string }> };
    const withoutReasoning = { ...state, items: state.items.filter((i) => i.type !== 'reasoning') };
    const without = await provider.runTurn(
      request([
        { role: 'user', content: 'read a and b' },
        { role: 'assistant', toolCalls: first.toolCalls, providerState: withoutReasoning },
        ...tail,
      ]),
    );
    expect(without.stopReason).toBe('error');
    expect(fake.rejections.at(-1)).toContain("without its required 'reasoning' item");
  });

  it('gets reasoning back encrypted only when it asks for it, as store:false needs (each store/include pair as the API answers)', async () => {
    const { provider, fake } = await setup('responses', () => ({
      reasoning: 'think',
      toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }],
    }));
    await provider.runTurn(request([{ role: 'user', content: 'read a' }]));
    expect(fake.calls[0]!.body).toMatchObject({ store: false, include: ['reasoning.encrypted_content'] });

    const post = async (body: Record<string, unknown>) => {
      const response = await fetch(`${fake.baseUrl}/responses`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-openai-key', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-5.1-codex', stream: true, ...body }),
      });
      const text = await response.text();
      const reasoning = /"type":"response\.output_item\.done"[^\n]*"type":"reasoning"[^\n]*/.exec(text)?.[0] ?? '';
      return { status: response.status, encrypted: reasoning.includes('encrypted_content'), text };
    };
    const replay = (encrypted: boolean) => [
      { type: 'message', role: 'user', content: 'read a' },
      { type: 'reasoning', id: 'rs_earlier', summary: [], ...(encrypted && { encrypted_content: 'enc_earlier' }) },
    ];
    expect(await post({ input: 'hi', store: false, include: ['reasoning.encrypted_content'] })).toMatchObject({
      status: 200,
      encrypted: true,
    });
    expect(await post({ input: 'hi', store: false })).toMatchObject({ status: 200, encrypted: false });
    expect(await post({ input: 'hi' })).toMatchObject({ status: 200, encrypted: false });
    expect(await post({ input: 'hi', include: ['reasoning.encrypted_content'] })).toMatchObject({
      status: 200,
      encrypted: true,
    });
    // Replaying reasoning: with store:false only the encrypted copy is accepted; stored responses need none.
    expect((await post({ input: replay(false), store: false })).status).toBe(400);
    expect(fake.rejections.at(-1)).toMatch(/Items are not persisted when `store` is set to false/);
    expect((await post({ input: replay(true), store: false })).status).toBe(200);
    expect((await post({ input: replay(false) })).status).toBe(200);
    expect((await post({ input: 'hi', include: ['reasoning.summary'] })).status).toBe(400);
  });

  it('streams text deltas and maps an incomplete response to max_tokens', async () => {
    const { provider } = await setup('responses', () => ({ text: 'a fairly long answer', truncated: true }));
    const deltas: string[] = [];
    const result = await provider.runTurn(
      request([{ role: 'user', content: 'hi' }], { onDelta: (d) => deltas.push(d) }),
    );
    expect(deltas.length).toBeGreaterThan(1);
    expect(result).toMatchObject({ stopReason: 'max_tokens', content: 'a fairly long answer' });
  });
});

describe.each<Kind>(['responses', 'chat'])('openai %s: shared behaviour', (kind) => {
  it('assembles several tool calls from awkwardly split argument deltas', async () => {
    const { provider } = await setup(kind, () => ({
      text: 'Two calls.',
      toolCalls: [
        { name: 'calculator', arguments: { a: 1.5, b: -2e3, op: 'mul "x"' } },
        { name: 'read_file', arguments: { path: 'ü/ñ.ts' } },
      ],
      argChunk: 1,
    }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'go' }]));
    expect(result.stopReason).toBe('tool_use');
    expect(result.content).toBe('Two calls.');
    expect(result.toolCalls.map((c) => [c.name, c.input])).toEqual([
      ['calculator', { a: 1.5, b: -2000, op: 'mul "x"' }],
      ['read_file', { path: 'ü/ñ.ts' }],
    ]);
    expect(result.usage.inputTokens).toBeGreaterThan(0);
  });

  it('rejects malformed JSON tool arguments as a retryable bad response', async () => {
    const { provider } = await setup(kind, () => ({
      toolCalls: [{ name: 'calculator', arguments: '' }],
      rawArguments: { 0: ['{"a": 1,', ' "b": '] },
    }));
    const result = await provider.runTurn(request([{ role: 'user', content: 'go' }]));
    expect(result.error).toMatchObject({ code: 'model_bad_response', retryable: true });
  });

  it('retries 429 honouring retry-after, then succeeds', async () => {
    const { provider, fake } = await setup(
      kind,
      (_b, i) =>
        i === 0
          ? {
              kind: 'error',
              status: 429,
              message: 'Rate limit reached',
              type: 'rate_limit_error',
              headers: { 'retry-after-ms': '250' },
            }
          : { text: 'hello' },
      { maxRetries: 2 },
    );
    const started = Date.now();
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result).toMatchObject({ stopReason: 'end_turn', content: 'hello' });
    expect(fake.calls).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('gives up after repeated 503s with a coded overload error', async () => {
    const { provider, fake } = await setup(
      kind,
      () => ({ kind: 'error', status: 503, message: 'overloaded', headers: { 'retry-after-ms': '5' } }),
      { maxRetries: 2 },
    );
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(fake.calls).toHaveLength(3);
    expect(result.error).toMatchObject({ code: 'model_overloaded', retryable: true });
  });

  it('reports a wrong key and an unknown model clearly', async () => {
    const { provider } = await setup(kind, () => ({ text: 'x' }), { apiKey: 'wrong' });
    const bad = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(bad.error?.code).toBe('model_auth');
    expect(bad.error?.message).toMatch(/rejected the API key/);
    await fake?.close();
    const missing = await setup(kind, () => ({
      kind: 'error',
      status: 404,
      message: 'The model `gpt-5.1-codex` does not exist or you do not have access to it.',
      code: 'model_not_found',
    }));
    const result = await missing.provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result.error?.code).toBe('model_not_found');
    expect(result.error?.message).toMatch(/^model gpt-5\.1-codex does not exist/);
  });

  it('ends as aborted when the signal fires mid-stream', async () => {
    const { provider } = await setup(kind, () => ({ text: 'streaming forever and ever', stall: true }));
    const controller = new AbortController();
    const result = await provider.runTurn(
      request([{ role: 'user', content: 'hi' }], { signal: controller.signal, onDelta: () => controller.abort() }),
    );
    expect(result.stopReason).toBe('aborted');
  });
});

describe('openai chat completions provider', () => {
  it('sends a transcript whose tool_call ids match (the fake refuses mismatches) and works keyless', async () => {
    const { provider, fake } = await setup(
      'chat',
      (_b, i) => (i === 0 ? { toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] } : { text: 'done' }),
      { apiKey: undefined, serverKey: null },
    );
    const first = await provider.runTurn(request([{ role: 'user', content: 'read a' }]));
    const call = first.toolCalls[0]!;
    const ok = await provider.runTurn(
      request([
        { role: 'user', content: 'read a' },
        { role: 'assistant', toolCalls: first.toolCalls },
        { role: 'tool', toolCallId: call.id, name: call.name, content: 'A', isError: false },
      ]),
    );
    expect(ok).toMatchObject({ stopReason: 'end_turn', content: 'done' });
    const bad = await provider.runTurn(
      request([
        { role: 'user', content: 'read a' },
        { role: 'assistant', toolCalls: first.toolCalls },
        { role: 'tool', toolCallId: 'call_other', name: call.name, content: 'A', isError: false },
      ]),
    );
    expect(bad.stopReason).toBe('error');
    expect(fake.rejections).toHaveLength(1);
    expect(fake.calls[0]!.headers.authorization).toBeUndefined();
  });

  it('gives every tool call an id of its own, even when the server repeats its ids across turns', async () => {
    // Like some local servers: every response numbers its calls from call_0.
    const { provider } = await setup(
      'chat',
      () => ({ toolCalls: [{ name: 'read_file', arguments: { path: 'a' }, callId: 'call_0' }] }),
      { apiKey: undefined, serverKey: null },
    );
    const first = await provider.runTurn(request([{ role: 'user', content: 'read a' }]));
    const second = await provider.runTurn(request([{ role: 'user', content: 'read a again' }]));
    expect([first.toolCalls[0]?.name, second.toolCalls[0]?.name]).toEqual(['read_file', 'read_file']);
    expect(first.toolCalls[0]?.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(second.toolCalls[0]?.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(second.toolCalls[0]?.id).not.toBe(first.toolCalls[0]?.id);
  });

  it('reports a base URL that does not answer as one clear error', async () => {
    const provider = createOpenAIChatProvider({ model: 'qwen3', baseUrl: 'http://127.0.0.1:9/v1', maxRetries: 0, log });
    const result = await provider.runTurn(request([{ role: 'user', content: 'hi' }]));
    expect(result.error?.code).toBe('model_unavailable');
    expect(result.error?.message).toMatch(/^Could not reach .* at http:\/\/127\.0\.0\.1:9\/v1/);
  });
});
