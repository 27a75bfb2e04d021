import type OpenAI from 'openai';
import type { Logger } from 'pino';
import type {
  ModelImage,
  ModelMessage,
  ModelProvider,
  StopReason,
  TurnError,
  TurnRequest,
  TurnResult,
  Usage,
} from './model-provider.ts';
import { contextWindowFor } from './model-catalog.ts';
import { createOpenAIClient } from './openai-client.ts';
import { type CallSettings, streamCall, streamCutError, streamTurn } from './stream-turn.ts';
import { errorTurn, finishTurn } from './turn-accumulator.ts';
import { withImageNotes } from './image-notes.ts';
import { openStream, refusedImageOf } from './openai-image-refusal.ts';

export type OpenAIResponsesProviderOptions = CallSettings & {
  model: string;
  apiKey?: string | undefined;
  /** Includes `/v1` (or `/zen/v1`). */
  baseUrl?: string | undefined;
  contextWindow?: number;
  vendorLabel?: string;
  /** Reported as the provider's name; 'openai' unless a gateway wraps this adapter. */
  name?: string;
  /** Whether the model reads images (default: yes); without, each image is a note in the text. */
  vision?: boolean | undefined;
  log: Logger;
  fetch?: typeof fetch | undefined;
};

type InputItem = Record<string, unknown>;

/**
 * What the assistant message keeps for the next turn: the output items exactly as the API sent
 * them. With store:false, reasoning items (with encrypted_content) must be sent back in front of
 * the function calls they led to.
 */
export type ResponsesProviderState = { kind: 'openai-responses'; items: InputItem[] };

export function createOpenAIResponsesProvider(options: OpenAIResponsesProviderOptions): ModelProvider {
  const baseUrl = options.baseUrl ?? 'https://api.openai.com/v1';
  const client = createOpenAIClient({
    apiKey: options.apiKey,
    baseUrl,
    fetch: options.fetch,
  });
  const ctx = { vendor: options.vendorLabel ?? 'OpenAI', model: options.model, baseUrl };
  const log = options.log.child({ provider: 'openai-responses', model: options.model });
  const call = streamCall(ctx, log, options);

  return {
    name: options.name ?? 'openai',
    model: options.model,
    contextWindow: options.contextWindow ?? contextWindowFor(options.model),
    runTurn(request: TurnRequest): Promise<TurnResult> {
      return streamTurn(request, call, async (acc, usage, scope) => {
        const items: InputItem[] = [];
        let stopReason: StopReason = 'end_turn';
        let ended = false;
        let refused = false;
        const body = buildResponsesRequest(options.model, request, options.vision ?? true);
        const opened = await openStream(
          () =>
            client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming, {
              signal: scope.signal,
            }),
          body,
          request,
          ctx,
        );
        if ('refused' in opened) return () => errorTurn(opened.refused, acc, usage);
        for await (const event of opened.stream) {
          scope.alive();
          switch (event.type) {
            case 'response.output_text.delta':
              acc.text(event.delta);
              break;
            case 'response.refusal.delta':
              refused = true;
              acc.text(event.delta);
              break;
            case 'response.output_item.added':
              if (event.item.type === 'function_call')
                acc.startToolCall(event.item.id ?? event.output_index, event.item.call_id, event.item.name);
              break;
            case 'response.function_call_arguments.delta':
              acc.appendToolArguments(event.item_id, event.delta);
              break;
            case 'response.function_call_arguments.done':
              acc.setToolArguments(event.item_id, event.arguments);
              break;
            case 'response.output_item.done':
              items.push(event.item as unknown as InputItem);
              break;
            case 'response.completed':
            case 'response.incomplete':
              ended = true;
              readUsage(usage, event.response.usage);
              if (event.type === 'response.incomplete') {
                stopReason = event.response.incomplete_details?.reason === 'content_filter' ? 'refusal' : 'max_tokens';
              }
              break;
            case 'response.failed': {
              readUsage(usage, event.response.usage);
              return () => errorTurn(failedResponseError(event.response.error, body, request), acc, usage);
            }
            default:
              break;
          }
        }
        if (!ended) return () => errorTurn(streamCutError(ctx, 'response.completed'), acc, usage);
        if (stopReason === 'end_turn' && acc.hasToolCalls()) stopReason = 'tool_use';
        if (stopReason === 'end_turn' && refused) stopReason = 'refusal';
        const state: ResponsesProviderState = { kind: 'openai-responses', items };
        return () => finishTurn(acc, stopReason, usage, state);
      });
    },
  };
}

/**
 * A response that failed after it was accepted: retryable, unless the model could not take one of
 * the request's pictures (an image code), which is named so the runner drops it.
 */
function failedResponseError(
  failure: OpenAI.Responses.ResponseError | null | undefined,
  body: Record<string, unknown>,
  request: TurnRequest,
): TurnError {
  const message = `OpenAI response failed: ${failure?.message ?? 'unknown error'}`;
  const refusedImage = failure ? refusedImageOf(failure, body, request) : undefined;
  if (refusedImage === undefined) return { code: 'model_error', message, retryable: true };
  return { code: 'model_error', message, retryable: false, refusedImage };
}

/** Reasoning models get their encrypted reasoning back so store:false turns keep their chain. */
function isReasoningModel(model: string): boolean {
  return /^(gpt-5|o\d|codex)/.test(model.replace(/^.*\//, ''));
}

export function buildResponsesRequest(model: string, request: TurnRequest, vision = true): Record<string, unknown> {
  return {
    model,
    instructions: request.system,
    input: toResponsesInput(vision ? request.messages : withImageNotes(request.messages)),
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((t) => ({
            type: 'function',
            name: t.name,
            description: t.description,
            parameters: t.inputSchema,
            strict: false,
          })),
          tool_choice: request.toolChoice ? { type: 'function', name: request.toolChoice.name } : 'auto',
          parallel_tool_calls: !request.toolChoice,
        }
      : {}),
    max_output_tokens: request.maxTokens,
    store: false,
    stream: true,
    ...(isReasoningModel(model) ? { include: ['reasoning.encrypted_content'] } : {}),
  };
}

/** A picture as the Responses API takes it: an input_image part with a data URL. */
function inputImage(image: ModelImage): Record<string, unknown> {
  return { type: 'input_image', image_url: `data:${image.mediaType};base64,${image.data}`, detail: 'auto' };
}

export function toResponsesInput(messages: readonly ModelMessage[]): InputItem[] {
  const input: InputItem[] = [];
  for (const m of messages) {
    if (m.role === 'user') {
      const content = m.images?.length
        ? [...m.images.map(inputImage), { type: 'input_text', text: m.content }]
        : m.content;
      input.push({ type: 'message', role: 'user', content });
    } else if (m.role === 'tool') {
      const text = m.isError ? `Error: ${m.content}` : m.content;
      const output = m.images?.length ? [{ type: 'input_text', text }, ...m.images.map(inputImage)] : text;
      input.push({ type: 'function_call_output', call_id: m.toolCallId, output });
    } else {
      const state = responsesState(m.providerState);
      if (state) {
        input.push(...state.items.map(stripForReplay));
        continue;
      }
      if (m.content) input.push({ type: 'message', role: 'assistant', content: m.content });
      for (const call of m.toolCalls ?? []) {
        input.push({
          type: 'function_call',
          call_id: call.id,
          name: call.name,
          arguments: JSON.stringify(call.input ?? {}),
        });
      }
    }
  }
  return input;
}

function responsesState(state: unknown): ResponsesProviderState | undefined {
  if (typeof state !== 'object' || state === null) return undefined;
  const s = state as Partial<ResponsesProviderState>;
  return s.kind === 'openai-responses' && Array.isArray(s.items) ? (s as ResponsesProviderState) : undefined;
}

/** Output-only fields the API refuses on input items. */
function stripForReplay(item: InputItem): InputItem {
  const { status: _status, ...rest } = item;
  if (rest.type === 'message' && Array.isArray(rest.content)) {
    rest.content = (rest.content as Array<Record<string, unknown>>).map(({ logprobs: _l, ...part }) => part);
  }
  return rest;
}

type WireUsage =
  | { input_tokens?: number; output_tokens?: number; input_tokens_details?: { cached_tokens?: number } | null }
  | null
  | undefined;

function readUsage(usage: Usage, wire: WireUsage): void {
  if (!wire) return;
  usage.inputTokens = wire.input_tokens ?? 0;
  usage.outputTokens = wire.output_tokens ?? 0;
  usage.cacheReadTokens = wire.input_tokens_details?.cached_tokens ?? 0;
}
