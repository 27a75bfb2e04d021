import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createAnthropicProvider } from '../../src/models/anthropic-provider.ts';
import type { ModelImage, ModelMessage, ModelProvider, TurnRequest } from '../../src/models/model-provider.ts';
import { createOpenAIChatProvider } from '../../src/models/openai-chat-provider.ts';
import { createOpenAIResponsesProvider } from '../../src/models/openai-responses-provider.ts';
import { type FakeAnthropic, startFakeAnthropic } from '../fakes/fake-anthropic.ts';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.ts';
import { blankPng } from '../helpers/blank-png.ts';

const log = pino({ level: 'silent' });
/** A real 1×1 PNG. */
const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const image: ModelImage = { mediaType: 'image/png', data: png, name: 'bug.png', width: 1, height: 1 };
const tools = [
  {
    name: 'screenshot',
    description: 'Take a screenshot',
    inputSchema: { type: 'object', properties: { url: { type: 'string' } } },
  },
];

/** A person's message with a picture, a screenshot tool call, and its result with a picture. */
const transcript: ModelMessage[] = [
  { role: 'user', content: 'The button is the wrong colour, see the picture.', images: [image] },
  { role: 'assistant', toolCalls: [{ id: 'call_1', name: 'screenshot', input: { url: 'http://127.0.0.1:3000/' } }] },
  {
    role: 'tool',
    toolCallId: 'call_1',
    name: 'screenshot',
    content: 'Screenshot of /',
    isError: false,
    images: [image],
  },
];

function request(messages: ModelMessage[]): TurnRequest {
  return { system: 'You are Patchbay.', messages, tools, maxTokens: 512, signal: AbortSignal.timeout(10_000) };
}

let anthropic: FakeAnthropic | undefined;
let openai: FakeOpenAI | undefined;
afterEach(async () => {
  await anthropic?.close();
  await openai?.close();
  anthropic = openai = undefined;
});

async function turn(provider: ModelProvider, messages = transcript) {
  const result = await provider.runTurn(request(messages));
  expect(result.error).toBeUndefined();
  expect(result.stopReason).toBe('end_turn');
}

describe('images reach the model as image input', () => {
  it('Anthropic: image blocks in the user turn and inside the tool result', async () => {
    anthropic = await startFakeAnthropic({ script: () => ({ content: [{ type: 'text', text: 'I see it.' }] }) });
    const provider = createAnthropicProvider({
      model: 'claude-sonnet-4-6',
      apiKey: 'test-anthropic-key',
      baseUrl: anthropic.baseUrl,
      maxRetries: 0,
      log,
    });
    await turn(provider);
    expect(anthropic.rejections).toEqual([]);
    const [first, , third] = anthropic.calls[0]!.body.messages;
    const source = { type: 'base64', media_type: 'image/png', data: png };
    expect(first!.content).toEqual([
      { type: 'image', source },
      expect.objectContaining({ type: 'text', text: 'The button is the wrong colour, see the picture.' }),
    ]);
    expect(third!.content).toEqual([
      expect.objectContaining({
        type: 'tool_result',
        tool_use_id: 'call_1',
        content: [
          { type: 'text', text: 'Screenshot of /' },
          { type: 'image', source },
        ],
      }),
    ]);
  });

  it('OpenAI Responses: input_image parts with a data URL, in the message and the function output', async () => {
    openai = await startFakeOpenAI({ responses: () => ({ text: 'I see it.' }) });
    const provider = createOpenAIResponsesProvider({
      model: 'gpt-5.1-codex',
      apiKey: 'test-openai-key',
      baseUrl: openai.baseUrl,
      maxRetries: 0,
      log,
    });
    await turn(provider);
    expect(openai.rejections).toEqual([]);
    const input = openai.calls[0]!.body.input as Array<Record<string, unknown>>;
    const part = { type: 'input_image', image_url: `data:image/png;base64,${png}`, detail: 'auto' };
    expect(input[0]).toEqual({
      type: 'message',
      role: 'user',
      content: [part, { type: 'input_text', text: 'The button is the wrong colour, see the picture.' }],
    });
    expect(input.find((item) => item.type === 'function_call_output')).toEqual({
      type: 'function_call_output',
      call_id: 'call_1',
      output: [{ type: 'input_text', text: 'Screenshot of /' }, part],
    });
  });

  it('Chat Completions with vision: image_url parts; a tool call’s picture follows its tool messages', async () => {
    openai = await startFakeOpenAI({ chat: () => ({ text: 'I see it.' }), apiKey: null });
    const provider = createOpenAIChatProvider({ model: 'llava', baseUrl: openai.baseUrl, vision: true, log });
    await turn(provider);
    expect(openai.rejections).toEqual([]);
    const messages = openai.calls[0]!.body.messages as Array<Record<string, unknown>>;
    const part = { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } };
    expect(messages[1]).toEqual({
      role: 'user',
      content: [part, { type: 'text', text: 'The button is the wrong colour, see the picture.' }],
    });
    expect(messages.slice(3).map((m) => m.role)).toEqual(['tool', 'user']);
    expect(messages[3]!.content).toBe('Screenshot of /');
    expect(messages[4]!.content).toEqual([{ type: 'text', text: 'Images from the screenshot call call_1:' }, part]);
  });

  it('a model without vision gets a note that an image was attached, and no image', async () => {
    openai = await startFakeOpenAI({ chat: () => ({ text: 'Noted.' }), apiKey: null });
    const provider = createOpenAIChatProvider({ model: 'qwen3-coder', baseUrl: openai.baseUrl, log });
    await turn(provider);
    expect(openai.rejections).toEqual([]);
    const body = JSON.stringify(openai.calls[0]!.body);
    expect(body).not.toContain(png);
    const messages = openai.calls[0]!.body.messages as Array<{ role: string; content: unknown }>;
    expect(messages[1]!.content).toContain(
      '[An image was attached here (bug.png, PNG, 1×1); this model cannot see images.',
    );
    expect(messages.at(-1)!.content).toContain('Screenshot of /\n[An image was attached here (bug.png');
  });
});

describe('the fakes refuse what the APIs refuse', () => {
  it('an image whose bytes are not its media type', async () => {
    anthropic = await startFakeAnthropic({ script: () => ({ content: [{ type: 'text', text: 'x' }] }) });
    const provider = createAnthropicProvider({
      model: 'claude-sonnet-4-6',
      apiKey: 'test-anthropic-key',
      baseUrl: anthropic.baseUrl,
      maxRetries: 0,
      log,
    });
    const notPng: ModelImage = { ...image, data: Buffer.from('%PDF-1.7 not a picture').toString('base64') };
    const result = await provider.runTurn(request([{ role: 'user', content: 'look', images: [notPng] }]));
    expect(result.stopReason).toBe('error');
    expect(anthropic.rejections).toEqual([
      expect.stringContaining('specified using the image/png media type, but the image appears to be a unsupported'),
    ]);
  });
});

describe('a Responses stream that fails on a picture', () => {
  const failed = (error: Record<string, unknown>) => ({
    kind: 'recorded' as const,
    lines: [
      JSON.stringify({
        type: 'response.created',
        sequence_number: 0,
        response: { id: 'resp_1', status: 'in_progress' },
      }),
      JSON.stringify({
        type: 'response.failed',
        sequence_number: 1,
        response: { id: 'resp_1', status: 'failed', error, usage: null, output: [] },
      }),
    ],
  });
  const second: ModelImage = { ...image, name: 'page.png', data: Buffer.from(blankPng(2, 2)).toString('base64') };
  const twoPictures: ModelMessage[] = [
    { role: 'user', content: 'The button is the wrong colour, see the picture.', images: [image] },
    transcript[1]!,
    {
      role: 'tool',
      toolCallId: 'call_1',
      name: 'screenshot',
      content: 'Screenshot of /',
      isError: false,
      images: [second],
    },
  ];
  const provider = () =>
    createOpenAIResponsesProvider({
      model: 'gpt-5',
      apiKey: 'test-openai-key',
      baseUrl: openai!.baseUrl,
      maxRetries: 0,
      log,
    });

  it('with an image code (ResponseError.code) names the picture, and is not retried', async () => {
    openai = await startFakeOpenAI({
      responses: () => failed({ code: 'image_parse_error', message: 'Could not parse the image.', param: null }),
    });
    const result = await provider().runTurn(request(twoPictures));
    expect(result.error).toMatchObject({ code: 'model_error', retryable: false, refusedImage: 1 });
    expect(openai.rejections).toEqual([]);
  });

  it('with any other code stays a retryable failure that names no picture', async () => {
    openai = await startFakeOpenAI({
      responses: () => failed({ code: 'server_error', message: 'The server had an error.', param: null }),
    });
    const result = await provider().runTurn(request(twoPictures));
    expect(result.error).toMatchObject({ code: 'model_error', retryable: true });
    expect(result.error?.refusedImage).toBeUndefined();
  });
});
