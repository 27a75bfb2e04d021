import { z } from 'zod';
import type { Usage } from '../core/transcript.ts';
import type { RelayApi } from './engine.ts';

/** One model call's usage as the relay read it from the provider's answer, and the tool calls the answer asks for. */
export type MeteredCall = { model: string; usage: Usage; toolCalls: number };

const AnthropicUsage = z.object({
  input_tokens: z.number().int().nonnegative().optional(),
  output_tokens: z.number().int().nonnegative().optional(),
  cache_read_input_tokens: z.number().int().nonnegative().nullish(),
  cache_creation_input_tokens: z.number().int().nonnegative().nullish(),
});
type AnthropicUsage = z.infer<typeof AnthropicUsage>;

const OpenAIUsage = z.object({
  input_tokens: z.number().int().nonnegative().optional(),
  output_tokens: z.number().int().nonnegative().optional(),
  prompt_tokens: z.number().int().nonnegative().optional(),
  completion_tokens: z.number().int().nonnegative().optional(),
  input_tokens_details: z.object({ cached_tokens: z.number().int().nonnegative().nullish() }).nullish(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().nonnegative().nullish() }).nullish(),
});

/** The JSON objects of an answer: its `data:` lines when it is a server-sent event stream, else the body itself. */
function answerObjects(body: string): unknown[] {
  const trimmed = body.trimStart();
  const lines = trimmed.startsWith('{')
    ? [trimmed]
    : body.split('\n').flatMap((l) => (l.startsWith('data:') ? [l.slice(5).trim()] : []));
  const out: unknown[] = [];
  for (const line of lines) {
    try {
      out.push(JSON.parse(line));
    } catch {
      // `[DONE]` and keep-alives are not JSON.
    }
  }
  return out;
}

/**
 * The usage of one answer of the provider, read where each wire format puts it (wire-formats §4,
 * §5): Anthropic's `message_start` and last `message_delta` (or the message's `usage`), OpenAI
 * Responses' `response.completed` (or the response's `usage`), Chat Completions' `usage`.
 * Undefined when the answer holds none (an error, a token count). Its tool calls are Anthropic's
 * `tool_use` blocks, or the Responses output's function, custom-tool and shell calls (Chat
 * Completions' `tool_calls`). Pure.
 */
export function meterAnswer(api: RelayApi, body: string, requestModel: string): MeteredCall | undefined {
  const objects = answerObjects(body);
  return api === 'anthropic' ? meterAnthropic(objects, requestModel) : meterOpenAI(objects, requestModel);
}

function meterAnthropic(objects: unknown[], requestModel: string): MeteredCall | undefined {
  let model = requestModel;
  let start: AnthropicUsage | undefined;
  let last: AnthropicUsage | undefined;
  let toolCalls = 0;
  for (const raw of objects) {
    const o = z.object({ type: z.string().optional(), model: z.string().optional() }).passthrough().safeParse(raw);
    if (!o.success) continue;
    toolCalls += anthropicToolUses(o.data);
    const message = z
      .object({ model: z.string(), usage: AnthropicUsage })
      .safeParse(o.data.type === 'message_start' ? o.data.message : o.data);
    if (message.success) {
      model = message.data.model;
      start = message.data.usage;
      last = message.data.usage;
    } else if (o.data.type === 'message_delta') {
      const delta = AnthropicUsage.safeParse(o.data.usage);
      if (delta.success) last = { ...last, ...stripUndefined(delta.data) };
    }
  }
  if (!start || !last) return undefined;
  const cacheReadTokens = last.cache_read_input_tokens ?? start.cache_read_input_tokens ?? 0;
  const cacheWriteTokens = last.cache_creation_input_tokens ?? start.cache_creation_input_tokens ?? 0;
  // Patchbay counts input with its cached part, as the Anthropic provider does.
  const inputTokens = (last.input_tokens ?? start.input_tokens ?? 0) + cacheReadTokens + cacheWriteTokens;
  return {
    model,
    usage: { inputTokens, outputTokens: last.output_tokens ?? 0, cacheReadTokens, cacheWriteTokens },
    toolCalls,
  };
}

const Blocks = z.array(z.object({ type: z.string() }).passthrough());

/** The tool_use blocks one object of an Anthropic answer starts: a streamed block, or a whole message's. */
function anthropicToolUses(o: { type?: string | undefined; [k: string]: unknown }): number {
  if (o.type === 'content_block_start')
    return z
      .object({ type: z.literal('tool_use') })
      .passthrough()
      .safeParse(o.content_block).success
      ? 1
      : 0;
  const content = Blocks.safeParse(o.type === 'message' ? o.content : undefined);
  return content.success ? content.data.filter((b) => b.type === 'tool_use').length : 0;
}

const OPENAI_CALL_ITEMS = new Set(['function_call', 'custom_tool_call', 'local_shell_call']);

/** The tool calls of an OpenAI answer: the Responses output's call items, or Chat Completions' tool_calls. */
function openaiToolCalls(raw: unknown): number {
  const o = z
    .object({
      output: Blocks.optional(),
      response: z.object({ output: Blocks.optional() }).optional(),
      choices: z
        .array(z.object({ message: z.object({ tool_calls: z.array(z.unknown()).nullish() }).optional() }))
        .optional(),
    })
    .safeParse(raw);
  if (!o.success) return 0;
  const items = o.data.response?.output ?? o.data.output ?? [];
  const chat = (o.data.choices ?? []).reduce((n, c) => n + (c.message?.tool_calls?.length ?? 0), 0);
  return items.filter((i) => OPENAI_CALL_ITEMS.has(i.type)).length + chat;
}

function meterOpenAI(objects: unknown[], requestModel: string): MeteredCall | undefined {
  for (const raw of objects.toReversed()) {
    const holder = z
      .object({
        model: z.string().optional(),
        usage: OpenAIUsage.nullish(),
        response: z.object({ model: z.string().optional(), usage: OpenAIUsage.nullish() }).optional(),
      })
      .safeParse(raw);
    if (!holder.success) continue;
    const usage = holder.data.response?.usage ?? holder.data.usage;
    if (!usage) continue;
    const cached = usage.input_tokens_details?.cached_tokens ?? usage.prompt_tokens_details?.cached_tokens ?? 0;
    const input = usage.input_tokens ?? usage.prompt_tokens ?? 0;
    return {
      model: holder.data.response?.model ?? holder.data.model ?? requestModel,
      usage: {
        inputTokens: input,
        outputTokens: usage.output_tokens ?? usage.completion_tokens ?? 0,
        cacheReadTokens: cached,
        cacheWriteTokens: 0,
      },
      toolCalls: openaiToolCalls(raw),
    };
  }
  return undefined;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}
