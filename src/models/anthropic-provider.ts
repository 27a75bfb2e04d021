import Anthropic from '@anthropic-ai/sdk';
import type { Logger } from 'pino';
import type {
  ModelImage,
  ModelMessage,
  ModelProvider,
  StopReason,
  ToolSpec,
  TurnRequest,
  TurnResult,
  Usage,
} from './model-provider.ts';
import { contextWindowFor } from './model-catalog.ts';
import { type CallSettings, streamCall, streamCutError, streamTurn } from './stream-turn.ts';
import { errorTurn, finishTurn } from './turn-accumulator.ts';
import { withImageNotes } from './image-notes.ts';

export type AnthropicProviderOptions = CallSettings & {
  model: string;
  apiKey: string;
  /** Without `/v1`; the SDK appends `/v1/messages`. */
  baseUrl?: string | undefined;
  /**
   * 'bearer' is what @anthropic-ai/sdk 1.14 sends; 'x-api-key' is for gateways that read only that
   * header (OpenCode Zen's /messages route).
   */
  authHeader?: 'bearer' | 'x-api-key';
  /** Off only to measure what caching saves (bench/model-caching.ts). */
  promptCaching?: boolean;
  contextWindow?: number;
  vendorLabel?: string;
  /** Whether the model reads images (default: yes); without, each image is a note in the text. */
  vision?: boolean | undefined;
  log: Logger;
  fetch?: typeof fetch | undefined;
};

type Block = Record<string, unknown> & { type: string };
type WireMessage = { role: 'user' | 'assistant'; content: Block[] };
const ephemeral = { type: 'ephemeral' } as const;

export function createAnthropicProvider(options: AnthropicProviderOptions): ModelProvider {
  const baseUrl = options.baseUrl ?? 'https://api.anthropic.com';
  const vendor = options.vendorLabel ?? 'Anthropic';
  const xApiKey = options.authHeader === 'x-api-key';
  // Every value is passed explicitly so the SDK never falls back to reading the environment.
  const client = new Anthropic({
    apiKey: xApiKey ? null : options.apiKey,
    authToken: null,
    webhookKey: null,
    baseURL: baseUrl,
    // Retries are ours (retry-policy.ts), so the policy is in one place and sees mid-stream faults too.
    maxRetries: 0,
    ...(xApiKey ? { defaultHeaders: { 'x-api-key': options.apiKey, Authorization: null } } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const ctx = { vendor, model: options.model, baseUrl };
  const log = options.log.child({ provider: 'anthropic', model: options.model });
  const call = streamCall(ctx, log, options);

  return {
    name: 'anthropic',
    model: options.model,
    contextWindow: options.contextWindow ?? contextWindowFor(options.model),
    runTurn(request: TurnRequest): Promise<TurnResult> {
      const body = buildAnthropicRequest(options.model, request, options.promptCaching ?? true, options.vision ?? true);
      return withRefusedImage(
        body,
        request,
        streamTurn(request, call, async (acc, usage, scope) => {
          let stopReason: StopReason = 'end_turn';
          let stopped = false;
          const stream = await client.messages.create(
            { ...body, stream: true } as unknown as Anthropic.MessageCreateParamsStreaming,
            { signal: scope.signal },
          );
          for await (const event of stream) {
            scope.alive();
            switch (event.type) {
              case 'message_start':
                readUsage(usage, event.message.usage);
                break;
              case 'content_block_start':
                if (event.content_block.type === 'text') acc.text(event.content_block.text);
                else if (event.content_block.type === 'tool_use') {
                  acc.startToolCall(event.index, event.content_block.id, event.content_block.name);
                }
                break;
              case 'content_block_delta':
                if (event.delta.type === 'text_delta') acc.text(event.delta.text);
                else if (event.delta.type === 'input_json_delta')
                  acc.appendToolArguments(event.index, event.delta.partial_json);
                break;
              case 'message_delta':
                readUsage(usage, event.usage);
                stopReason = mapStopReason(event.delta.stop_reason);
                break;
              case 'message_stop':
                stopped = true;
                break;
              default:
                break;
            }
          }
          if (!stopped) return () => errorTurn(streamCutError(ctx, 'message_stop'), acc, usage);
          return () => finishTurn(acc, stopReason, usage);
        }),
      );
    },
  };
}

/** Exported for tests and the bench: the exact body the adapter sends, minus `stream`. */
export function buildAnthropicRequest(
  model: string,
  request: TurnRequest,
  caching: boolean,
  vision = true,
): Record<string, unknown> {
  const tools = request.tools.map((tool: ToolSpec, i) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.inputSchema,
    ...(caching && i === request.tools.length - 1 ? { cache_control: ephemeral } : {}),
  }));
  const system = request.system
    ? [{ type: 'text', text: request.system, ...(caching ? { cache_control: ephemeral } : {}) }]
    : undefined;
  const messages = toAnthropicMessages(vision ? request.messages : withImageNotes(request.messages));
  if (caching) markHistoryBreakpoints(messages);
  return {
    model,
    max_tokens: request.maxTokens,
    ...(system ? { system } : {}),
    ...(tools.length > 0
      ? { tools, tool_choice: request.toolChoice ? { type: 'tool', name: request.toolChoice.name } : { type: 'auto' } }
      : {}),
    messages,
  };
}

/**
 * Breakpoints on the last block of the newest two user messages: the newest writes this turn's
 * prefix, the one before re-marks the prefix written last turn so it is read from cache. With the
 * system prompt and the tool list that makes four, the API's maximum.
 */
function markHistoryBreakpoints(messages: WireMessage[]): void {
  let marked = 0;
  for (let i = messages.length - 1; i >= 0 && marked < 2; i--) {
    const message = messages[i];
    if (message?.role !== 'user') continue;
    const last = message.content[message.content.length - 1];
    if (last) last.cache_control = ephemeral;
    marked++;
  }
}

/**
 * Tool results of one assistant turn go in a single user message, before any user text that
 * arrived meanwhile; consecutive user messages are merged since the API expects alternation.
 */
export function toAnthropicMessages(messages: readonly ModelMessage[]): WireMessage[] {
  const out: WireMessage[] = [];
  const pushUser = (blocks: Block[], toolResult: boolean) => {
    const prev = out[out.length - 1];
    if (prev && prev.role === 'user') {
      if (toolResult) {
        const firstText = prev.content.findIndex((b) => b.type !== 'tool_result');
        if (firstText === -1) prev.content.push(...blocks);
        else prev.content.splice(firstText, 0, ...blocks);
      } else prev.content.push(...blocks);
    } else out.push({ role: 'user', content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'user') {
      pushUser([...(m.images ?? []).map(imageBlock), { type: 'text', text: m.content || '(empty message)' }], false);
    } else if (m.role === 'tool') {
      const text = m.content || '(no output)';
      const content = m.images?.length ? [{ type: 'text', text }, ...m.images.map(imageBlock)] : text;
      pushUser([{ type: 'tool_result', tool_use_id: m.toolCallId, content, is_error: m.isError }], true);
    } else {
      const content: Block[] = [];
      if (m.content) content.push({ type: 'text', text: m.content });
      for (const call of m.toolCalls ?? [])
        content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.input ?? {} });
      if (content.length === 0) content.push({ type: 'text', text: '(no content)' });
      out.push({ role: 'assistant', content });
    }
  }
  return out;
}

/**
 * A 400 about one picture names it by its place in the body, as recorded from the API:
 * "messages.7.content.2.image.source.base64.data: At least one of the image dimensions exceed max
 * allowed size: 8000 pixels" (a picture inside a tool result has one more `content.N`). The error
 * then says which of the request's pictures it was (TurnError.refusedImage), found by its data.
 */
async function withRefusedImage(
  body: Record<string, unknown>,
  request: TurnRequest,
  turn: Promise<TurnResult>,
): Promise<TurnResult> {
  const result = await turn;
  const error = result.error;
  if (error?.code !== 'model_error') return result;
  const path = /messages\.(\d+)\.content\.(\d+)(?:\.content\.(\d+))?\.(?:image|source)/.exec(error.message);
  if (!path) return result;
  const wire = (body.messages as WireMessage[])[Number(path[1])];
  let block = wire?.content[Number(path[2])];
  if (path[3] !== undefined && Array.isArray(block?.content)) block = (block.content as Block[])[Number(path[3])];
  const data = (block?.source as { data?: unknown } | undefined)?.data;
  const images = request.messages.flatMap((m) => (m.role === 'assistant' ? [] : (m.images ?? [])));
  const ordinal = images.findIndex((image) => image.data === data);
  return ordinal === -1 ? result : { ...result, error: { ...error, refusedImage: ordinal } };
}

/** A picture as Anthropic's Messages API takes it: a base64 image block. */
function imageBlock(image: ModelImage): Block {
  return { type: 'image', source: { type: 'base64', media_type: image.mediaType, data: image.data } };
}

type WireUsage = {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
};

/** Anthropic's input_tokens excludes cached tokens; our Usage counts every prompt token. */
function readUsage(usage: Usage, wire: WireUsage | null | undefined): void {
  if (!wire) return;
  const read = wire.cache_read_input_tokens ?? undefined;
  const write = wire.cache_creation_input_tokens ?? undefined;
  if (read !== undefined) usage.cacheReadTokens = read;
  if (write !== undefined) usage.cacheWriteTokens = write;
  if (typeof wire.input_tokens === 'number')
    usage.inputTokens = wire.input_tokens + usage.cacheReadTokens + usage.cacheWriteTokens;
  if (typeof wire.output_tokens === 'number') usage.outputTokens = wire.output_tokens;
}

function mapStopReason(reason: string | null | undefined): StopReason {
  switch (reason) {
    case 'tool_use':
      return 'tool_use';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'pause_turn':
      return 'pause_turn';
    case 'refusal':
      return 'refusal';
    default:
      return 'end_turn';
  }
}
