import { randomUUID } from 'node:crypto';
import type OpenAI from 'openai';
import type { Logger } from 'pino';
import type {
  ModelImage,
  ModelMessage,
  ModelProvider,
  StopReason,
  TurnRequest,
  TurnResult,
  Usage,
} from './model-provider.ts';
import { contextWindowFor } from './model-catalog.ts';
import { createOpenAIClient } from './openai-client.ts';
import { type CallSettings, streamCall, streamCutError, streamTurn } from './stream-turn.ts';
import { errorTurn, finishTurn } from './turn-accumulator.ts';
import { withImageNotes } from './image-notes.ts';
import { openStream } from './openai-image-refusal.ts';

/** Chat Completions with tool_calls: Ollama, vLLM, LM Studio and gateways' chat routes. */
export type OpenAIChatProviderOptions = CallSettings & {
  model: string;
  apiKey?: string | undefined;
  /** Includes `/v1`. */
  baseUrl: string;
  contextWindow?: number;
  vendorLabel?: string;
  name?: string;
  /** Whether the model reads images (default: no); without, each image is a note in the text. */
  vision?: boolean | undefined;
  log: Logger;
  fetch?: typeof fetch | undefined;
};

export function createOpenAIChatProvider(options: OpenAIChatProviderOptions): ModelProvider {
  const client = createOpenAIClient(options);
  const ctx = { vendor: options.vendorLabel ?? 'The model server', model: options.model, baseUrl: options.baseUrl };
  const log = options.log.child({ provider: 'openai-chat', model: options.model });
  const call = streamCall(ctx, log, options);

  return {
    name: options.name ?? 'openai-compatible',
    model: options.model,
    contextWindow: options.contextWindow ?? contextWindowFor(options.model),
    runTurn(request: TurnRequest): Promise<TurnResult> {
      return streamTurn(request, call, async (acc, usage, scope) => {
        let finish: string | null | undefined;
        const started = new Set<number>();
        const body = buildChatRequest(options.model, request, options.vision ?? false);
        const opened = await openStream(
          () =>
            client.chat.completions.create(body as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming, {
              signal: scope.signal,
            }),
          body,
          request,
          ctx,
        );
        if ('refused' in opened) return () => errorTurn(opened.refused, acc, usage);
        for await (const chunk of opened.stream) {
          scope.alive();
          if (chunk.usage) readUsage(usage, chunk.usage);
          const choice = chunk.choices[0];
          if (!choice) continue;
          const delta = choice.delta;
          if (delta?.content) acc.text(delta.content);
          for (const call of delta?.tool_calls ?? []) {
            // The first delta of a call carries its name (and usually an id); later ones only
            // argument text. The id is ours: local servers often number calls per response, and the
            // session keys events by call id, so a repeat across turns would lose events.
            if (!started.has(call.index)) {
              started.add(call.index);
              acc.startToolCall(
                call.index,
                `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`,
                call.function?.name ?? '',
              );
            }
            if (call.function?.arguments) acc.appendToolArguments(call.index, call.function.arguments);
          }
          if (choice.finish_reason) finish = choice.finish_reason;
        }
        // The SDK hides [DONE] and ends quietly without it; a finish_reason is the end we can see.
        if (!finish) return () => errorTurn(streamCutError(ctx, 'finish_reason'), acc, usage);
        return () => finishTurn(acc, mapFinishReason(finish, acc.hasToolCalls()), usage);
      });
    },
  };
}

export function buildChatRequest(model: string, request: TurnRequest, vision = false): Record<string, unknown> {
  return {
    model,
    messages: toChatMessages(request.system, vision ? request.messages : withImageNotes(request.messages)),
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((t) => ({
            type: 'function',
            function: { name: t.name, description: t.description, parameters: t.inputSchema },
          })),
          tool_choice: request.toolChoice ? { type: 'function', function: { name: request.toolChoice.name } } : 'auto',
        }
      : {}),
    // max_tokens rather than max_completion_tokens: local servers understand only the older name.
    max_tokens: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
}

export function toChatMessages(system: string, messages: readonly ModelMessage[]): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  if (system) out.push({ role: 'system', content: system });
  // Tool messages take text only: their pictures follow, after the turn's last tool message, as a user message.
  let toolImages: Array<Record<string, unknown>> = [];
  const flushToolImages = () => {
    if (toolImages.length > 0) out.push({ role: 'user', content: toolImages });
    toolImages = [];
  };
  for (const m of messages) {
    if (m.role !== 'tool') flushToolImages();
    if (m.role === 'user') {
      const content = m.images?.length ? [...m.images.map(imageUrlPart), { type: 'text', text: m.content }] : m.content;
      out.push({ role: 'user', content });
    } else if (m.role === 'tool') {
      out.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.isError ? `Error: ${m.content}` : m.content });
      if (m.images?.length)
        toolImages.push(
          { type: 'text', text: `Images from the ${m.name} call ${m.toolCallId}:` },
          ...m.images.map(imageUrlPart),
        );
    } else {
      const calls = m.toolCalls ?? [];
      out.push({
        role: 'assistant',
        content: m.content ?? (calls.length > 0 ? null : ''),
        ...(calls.length > 0
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: 'function',
                function: { name: c.name, arguments: JSON.stringify(c.input ?? {}) },
              })),
            }
          : {}),
      });
    }
  }
  flushToolImages();
  return out;
}

/** A picture as Chat Completions takes it: an image_url part with a data URL. */
function imageUrlPart(image: ModelImage): Record<string, unknown> {
  return { type: 'image_url', image_url: { url: `data:${image.mediaType};base64,${image.data}` } };
}

function mapFinishReason(reason: string | null | undefined, hasToolCalls: boolean): StopReason {
  switch (reason) {
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    case 'content_filter':
      return 'refusal';
    default:
      // Some local servers report 'stop' even when they emitted tool calls.
      return hasToolCalls ? 'tool_use' : 'end_turn';
  }
}

type WireUsage = {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
};

function readUsage(usage: Usage, wire: WireUsage): void {
  usage.inputTokens = wire.prompt_tokens ?? 0;
  usage.outputTokens = wire.completion_tokens ?? 0;
  usage.cacheReadTokens = wire.prompt_tokens_details?.cached_tokens ?? 0;
}
