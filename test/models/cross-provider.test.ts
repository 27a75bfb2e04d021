import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createModelProvider } from '../../src/models/create-model-provider.ts';
import type { ModelProviderConfig } from '../../src/models/create-model-provider.ts';
import type { ToolCall, ToolSpec } from '../../src/models/model-provider.ts';
import { startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import type { AnthropicRequest, FakeAnthropic } from '../fakes/fake-anthropic.ts';
import { startFakeOpenAI } from '../fakes/fake-openai.ts';
import type { FakeOpenAI, OpenAIReply, OpenAIRequestBody } from '../fakes/fake-openai.ts';
import { driveSession } from './drive-session.ts';

/**
 * One scripted session (read a file, edit it, run a command, finish) served by every provider.
 * Each fake decides its step from the transcript it receives and quotes the last tool result, so
 * the test also proves that results made the round trip in each vendor's format.
 */
type Step = { tool?: { name: string; input: Record<string, unknown> }; text?: string; reasoning?: string | undefined };

function step(index: number, lastResult: string): Step {
  switch (index) {
    case 0:
      return {
        text: 'Reading the file first.',
        tool: { name: 'read_file', input: { path: 'src/greet.ts' } },
        reasoning: 'need the file',
      };
    case 1:
      return {
        tool: {
          name: 'edit_file',
          input: { path: 'src/greet.ts', old: lastResult, new: lastResult.replace('Hello', 'Hi') },
        },
      };
    case 2:
      return { tool: { name: 'run_command', input: { cmd: 'npm test -- greet' } }, reasoning: 'verify' };
    default:
      return { text: `Changed the greeting; tests say: ${lastResult}` };
  }
}

const tools: ToolSpec[] = [
  {
    name: 'read_file',
    description: 'Read a file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'edit_file',
    description: 'Replace text',
    inputSchema: {
      type: 'object',
      properties: { path: { type: 'string' }, old: { type: 'string' }, new: { type: 'string' } },
    },
  },
  {
    name: 'run_command',
    description: 'Run a command',
    inputSchema: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] },
  },
];

function execute(call: ToolCall): { content: string } {
  const input = call.input as Record<string, string>;
  if (call.name === 'read_file') return { content: `export const greet = () => "Hello, world";` };
  if (call.name === 'edit_file') return { content: `edited ${input.path}` };
  return { content: '1 passing' };
}

function anthropicScript(body: AnthropicRequest) {
  const index = body.messages.filter((m) => m.role === 'assistant').length;
  const last = body.messages.at(-1)!;
  const result = Array.isArray(last.content) ? last.content.find((b) => b.type === 'tool_result')?.content : undefined;
  const s = step(index, typeof result === 'string' ? result : '');
  return {
    content: [
      ...(s.text ? [{ type: 'text' as const, text: s.text }] : []),
      ...(s.tool ? [{ type: 'tool_use' as const, name: s.tool.name, input: s.tool.input }] : []),
    ],
  };
}

function toReply(s: Step): OpenAIReply {
  return {
    text: s.text,
    toolCalls: s.tool ? [{ name: s.tool.name, arguments: s.tool.input }] : [],
    reasoning: s.reasoning,
    argChunk: 4,
  };
}

function responsesScript(body: OpenAIRequestBody) {
  const input = body.input as Array<{ type?: string; output?: string }>;
  const outputs = input.filter((i) => i.type === 'function_call_output');
  return toReply(step(outputs.length, outputs.at(-1)?.output ?? ''));
}

function chatScript(body: OpenAIRequestBody) {
  const messages = body.messages as Array<{ role: string; content?: string }>;
  const index = messages.filter((m) => m.role === 'assistant').length;
  const last = messages.at(-1)!;
  return toReply({ ...step(index, last.role === 'tool' ? (last.content ?? '') : ''), reasoning: undefined });
}

let anthropic: FakeAnthropic;
let openai: FakeOpenAI;
let zenMessages: FakeAnthropic;
let zenOpenAI: FakeOpenAI;
let local: FakeOpenAI;

beforeAll(async () => {
  anthropic = await startFakeAnthropic({ script: anthropicScript, apiKey: 'ak' });
  openai = await startFakeOpenAI({ responses: responsesScript, apiKey: 'ok' });
  zenMessages = await startFakeAnthropic({
    script: anthropicScript,
    apiKey: 'zk',
    pathPrefix: '/zen',
    auth: 'x-api-key-only',
  });
  local = await startFakeOpenAI({ chat: chatScript, apiKey: null });
  zenOpenAI = await startFakeOpenAI({
    responses: responsesScript,
    chat: chatScript,
    apiKey: 'zk',
    pathPrefix: '/zen/v1',
  });
});
afterAll(async () => {
  await Promise.all([anthropic, openai, zenMessages, zenOpenAI, local].map((f) => f?.close()));
});

const log = pino({ level: 'silent' });

describe('the same session through every provider', () => {
  const cases: Array<[string, () => ModelProviderConfig]> = [
    [
      'anthropic',
      () => ({
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: 'ak',
        baseUrl: anthropic.baseUrl,
        maxRetries: 0,
      }),
    ],
    [
      'openai',
      () => ({ provider: 'openai', model: 'gpt-5.1-codex', apiKey: 'ok', baseUrl: openai.baseUrl, maxRetries: 0 }),
    ],
    [
      'opencode-zen (claude → messages)',
      () => ({
        provider: 'opencode-zen',
        model: 'claude-sonnet-4-6',
        apiKey: 'zk',
        baseUrl: zenOpenAI.baseUrl.replace(/:\d+/, `:${new URL(zenMessages.baseUrl).port}`),
        maxRetries: 0,
      }),
    ],
    [
      'opencode-zen (gpt → responses)',
      () => ({
        provider: 'opencode-zen',
        model: 'gpt-5.1-codex',
        apiKey: 'zk',
        baseUrl: zenOpenAI.baseUrl,
        maxRetries: 0,
      }),
    ],
    [
      'opencode-zen (glm → chat)',
      () => ({ provider: 'opencode-zen', model: 'glm-4.6', apiKey: 'zk', baseUrl: zenOpenAI.baseUrl, maxRetries: 0 }),
    ],
    [
      'openai-compatible',
      () => ({ provider: 'openai-compatible', model: 'qwen3-coder', baseUrl: local.baseUrl, maxRetries: 0 }),
    ],
  ];
  const outcomes = new Map<string, unknown>();

  it.each(cases)('%s', async (name, config) => {
    const provider = createModelProvider(config(), { log });
    const result = await driveSession(provider, {
      system: 'You are Patchbay.',
      prompt: 'Say Hi instead of Hello in src/greet.ts',
      tools,
      execute,
    });
    outcomes.set(name, { calls: result.calls, finalText: result.finalText });
    expect(result.calls.map((c) => c.name)).toEqual(['read_file', 'edit_file', 'run_command']);
    expect(result.calls[1]?.input).toEqual({
      path: 'src/greet.ts',
      old: 'export const greet = () => "Hello, world";',
      new: 'export const greet = () => "Hi, world";',
    });
    expect(result.finalText).toBe('Changed the greeting; tests say: 1 passing');
  });

  it('produced identical tool calls and final text everywhere, and no fake refused a request', () => {
    expect(outcomes.size).toBe(cases.length);
    const [first, ...rest] = [...outcomes.values()];
    for (const other of rest) expect(other).toEqual(first);
    for (const fake of [anthropic, openai, zenMessages, zenOpenAI, local]) expect(fake.rejections).toEqual([]);
    expect(zenMessages.calls[0]?.headers.authorization).toBeUndefined();
    expect(zenMessages.calls[0]?.headers['x-api-key']).toBe('zk');
    expect(zenOpenAI.calls.map((c) => c.endpoint)).toEqual([...Array(4).fill('responses'), ...Array(4).fill('chat')]);
  });
});
