import { type OpenAIImagePart, openaiRequestImageError } from './image-rules.ts';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { listenOnLoopback } from './loopback.ts';
import {
  applyConnectionFault,
  applyStreamFault,
  type ConnectionFault,
  type StreamFault,
  trickle,
} from './model-faults.ts';
import type { Chaos } from './chaos.ts';
import { openaiChaos } from './model-chaos.ts';

/**
 * A loopback OpenAI API (wire-formats §5): POST /v1/responses (Responses, SSE with event lines)
 * and POST /v1/chat/completions (data-only SSE ending in [DONE]). It rejects what the API rejects:
 * a missing or wrong Bearer key, a function_call_output or tool message whose call id matches no
 * earlier call, a call left without its output, (store:false) a function call replayed by its item id without
 * the reasoning item that preceded it or a reasoning item without its encrypted content, an output
 * of the wrong kind for its call (function vs custom tool), an unknown `include` value, and pictures
 * as the API refuses them (image-rules.ts: format, 20 MB each, undecodable bytes, 500 and 50 MB a
 * request), with its messages, codes and params. Reasoning comes back encrypted only when `include` asks for it.
 */
export type OpenAIToolCall = {
  name: string;
  arguments: unknown;
  callId?: string;
  /**
   * Responses only: a call to a custom (freeform) tool, such as Codex's `apply_patch`: a
   * `custom_tool_call` item whose `input` is `arguments` as a raw string, answered by a
   * `custom_tool_call_output`.
   */
  custom?: boolean;
};

export type OpenAIReply =
  | {
      kind?: 'reply';
      text?: string | undefined;
      toolCalls?: OpenAIToolCall[];
      /** Responses only: the usage's output tokens, instead of a count from the output's length (a costly answer). */
      outputTokens?: number;
      /** Responses only: emit a reasoning item (with encrypted_content) before the output. */
      reasoning?: string | undefined;
      /** 'length' (chat) / incomplete max_output_tokens (responses). */
      truncated?: boolean;
      /** Send these as the argument deltas of tool call N instead of splitting its JSON. */
      rawArguments?: Record<number, string[]>;
      argChunk?: number;
      stall?: boolean;
      /** After the first content delta: end without the closing event (cut), reset the connection (drop) or stall. */
      fault?: StreamFault;
      /**
       * After the first content delta, an error in the stream with this code (`server_error`,
       * `rate_limit_exceeded`): Responses sends `event: error`, Chat Completions a `data: {"error": …}` chunk.
       */
      midStreamError?: string;
      /** Each stream event this long after the one before (a slow answer that never goes quiet). */
      trickleMs?: number;
    }
  | { kind: 'error'; status: number; message: string; type?: string; code?: string; headers?: Record<string, string> }
  | ConnectionFault
  /** Responses: recorded stream events, one JSON object per line (@ai-sdk/openai fixtures). */
  | { kind: 'recorded'; lines: string[] };

export type OpenAIRequestBody = Record<string, unknown> & { model?: string };
export type OpenAIScript = (request: OpenAIRequestBody, callIndex: number) => OpenAIReply | Promise<OpenAIReply>;

export type FakeOpenAIOptions = {
  responses?: OpenAIScript;
  chat?: OpenAIScript;
  /** undefined: any request without a key is refused; null: keyless server (Ollama-like). */
  apiKey?: string | null | undefined;
  /** '/v1' by default; '/zen/v1' for OpenCode Zen; '/backend-api/codex' for the ChatGPT backend. */
  pathPrefix?: string;
  /**
   * Checks the credential instead of `apiKey` (the ChatGPT backend's sign-in: fake-openai-auth's
   * `authorize`): the reason a request is refused with 401, or undefined to serve it.
   */
  authorize?: (headers: IncomingMessage['headers']) => string | undefined;
  /** Transient faults at a rate in place of the script's answers (model-chaos.ts). */
  chaos?: Chaos;
};

export type FakeOpenAI = {
  /** Base URL for the SDK, including the path prefix. */
  baseUrl: string;
  calls: Array<{ endpoint: 'responses' | 'chat'; headers: IncomingMessage['headers']; body: OpenAIRequestBody }>;
  rejections: string[];
  close(): Promise<void>;
};

export async function startFakeOpenAI(options: FakeOpenAIOptions): Promise<FakeOpenAI> {
  const apiKey = options.apiKey === undefined ? 'test-openai-key' : options.apiKey;
  const prefix = options.pathPrefix ?? '/v1';
  const calls: FakeOpenAI['calls'] = [];
  const rejections: string[] = [];
  /** call_id → reasoning item id that preceded it in our output. */
  const reasoningFor = new Map<string, string>();
  let counter = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, String(error), 'server_error');
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const endpoint =
      req.url === `${prefix}/responses` ? 'responses' : req.url === `${prefix}/chat/completions` ? 'chat' : undefined;
    const script = endpoint === 'responses' ? options.responses : endpoint === 'chat' ? options.chat : undefined;
    if (req.method !== 'POST' || !endpoint || !script)
      return sendError(res, 404, `Unknown request URL: ${req.method} ${req.url}`, 'invalid_request_error');
    const reject = (status: number, message: string, code?: string | null, param?: string | null) => {
      rejections.push(message);
      sendError(res, status, message, 'invalid_request_error', code, param);
    };
    if (options.authorize) {
      const refused = options.authorize(req.headers);
      if (refused) return reject(401, refused, 'token_expired');
    } else if (apiKey !== null && req.headers.authorization !== `Bearer ${apiKey}`) {
      return reject(401, 'Incorrect API key provided.', 'invalid_api_key');
    }
    let body: OpenAIRequestBody;
    try {
      body = JSON.parse(raw) as OpenAIRequestBody;
    } catch {
      return reject(400, 'We could not parse the JSON body of your request.');
    }
    const problem = endpoint === 'responses' ? validateResponses(body, reasoningFor) : validateChat(body);
    if (problem) return reject(400, problem);
    const refused = await openaiRequestImageError(imagePartsIn(endpoint, body));
    if (refused) return reject(400, refused.message, refused.code, refused.param);
    calls.push({ endpoint, headers: req.headers, body });
    const reply = await openaiChaos(options.chaos, await script(body, calls.length - 1), endpoint);
    if (reply.kind === 'error') {
      for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
      return sendError(res, reply.status, reply.message, reply.type ?? 'server_error', reply.code);
    }
    if (reply.kind === 'drop' || reply.kind === 'hang') return applyConnectionFault(res, reply);
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    if (reply.kind === 'recorded') {
      for (const line of reply.lines)
        res.write(`event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`);
      res.end();
      return;
    }
    if (reply.trickleMs) trickle(res, reply.trickleMs);
    const n = ++counter;
    const inputTokens = Math.ceil(raw.length / 4);
    if (endpoint === 'responses') writeResponsesStream(res, body, reply, n, inputTokens, reasoningFor);
    else writeChatStream(res, body, reply, n, inputTokens);
  }

  const { port, close } = await listenOnLoopback(server);
  return {
    baseUrl: `http://127.0.0.1:${port}${prefix}`,
    calls,
    rejections,
    close,
  };
}

type Item = Record<string, unknown> & { type?: string };

/** The Responses API's accepted `include` values. */
const INCLUDABLE = [
  'code_interpreter_call.outputs',
  'computer_call_output.output.image_url',
  'file_search_call.results',
  'message.input_image.image_url',
  'message.output_text.logprobs',
  'reasoning.encrypted_content',
  'web_search_call.action.sources',
];
type ReplyOptions = Extract<OpenAIReply, { toolCalls?: unknown }>;

/** input_image parts: in a user message or a function call's output list. */
function responsesImageError(item: Item): string | undefined {
  if (item.type !== 'message' || item.role === 'user' || !Array.isArray(item.content)) return undefined;
  if ((item.content as Item[]).some((part) => part.type === 'input_image'))
    return `Invalid value: 'input_image'. Supported values are: 'output_text' and 'refusal'.`;
  return undefined;
}

/** image_url parts: in user messages only (a tool message takes text). */
function chatImageError(m: Item, i: number): string | undefined {
  if (m.role === 'user' || !Array.isArray(m.content)) return undefined;
  if ((m.content as Item[]).some((part) => part.type === 'image_url'))
    return `Invalid 'messages[${i}]'. Image URLs are only allowed for messages with role 'user', but this message with role '${String(m.role)}' contains an image URL.`;
  return undefined;
}

/** Every picture of a request, named by its place as the API names it in a refusal. */
function imagePartsIn(endpoint: 'responses' | 'chat', body: OpenAIRequestBody): OpenAIImagePart[] {
  const items = ((endpoint === 'responses' ? body.input : body.messages) as Item[] | undefined) ?? [];
  if (!Array.isArray(items)) return [];
  return items.flatMap((item, i) => {
    const field = Array.isArray(item.content) ? 'content' : Array.isArray(item.output) ? 'output' : undefined;
    if (!field) return [];
    return (item[field] as Item[]).flatMap((part, j) => {
      const where = `${endpoint === 'responses' ? 'input' : 'messages'}[${i}].${field}[${j}].image_url`;
      if (part.type === 'input_image') return [{ where, url: part.image_url }];
      if (part.type === 'image_url') return [{ where, url: (part.image_url as Item | undefined)?.url }];
      return [];
    });
  });
}

function validateResponses(body: OpenAIRequestBody, reasoningFor: Map<string, string>): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return "Missing required parameter: 'model'.";
  for (const tool of (body.tools as Item[] | undefined) ?? []) {
    if (tool.type === 'function' && (typeof tool.name !== 'string' || typeof tool.parameters !== 'object')) {
      return "Missing required parameter: 'tools[0].name'.";
    }
    if ('function' in tool) return "Unknown parameter: 'tools[0].function'.";
  }
  for (const value of (body.include as unknown[] | undefined) ?? []) {
    if (!INCLUDABLE.includes(String(value)))
      return `Invalid value: '${String(value)}'. Supported values are: ${INCLUDABLE.map((v) => `'${v}'`).join(', ')}.`;
  }
  const stored = body.store !== false;
  if (typeof body.input === 'string') return undefined;
  if (!Array.isArray(body.input)) return "Missing required parameter: 'input'.";
  const input = body.input as Item[];
  const calls = new Map<string, string>();
  const reasoningSeen = new Set<string>();
  for (const [i, item] of input.entries()) {
    if (item.type === 'reasoning') {
      // Stored responses keep their reasoning server-side; with store:false only the encrypted copy can bring it back.
      if (!stored && typeof item.encrypted_content !== 'string') {
        return `Item with id '${String(item.id)}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`;
      }
      reasoningSeen.add(String(item.id));
    }
    if (item.type === 'function_call' || item.type === 'custom_tool_call') {
      const field = item.type === 'function_call' ? 'arguments' : 'input';
      if (typeof item[field] !== 'string') return `Invalid type for 'input[${i}].${field}': expected a string.`;
      // Only an item that names its id (fc_…) is tied to the reasoning that produced it; an id-less
      // call is new input to the API, accepted on its own (OpenCode replays calls that way).
      const needed = item.id === undefined ? undefined : reasoningFor.get(String(item.call_id));
      if (needed && !reasoningSeen.has(needed)) {
        return `Item '${String(item.id ?? item.call_id)}' of type '${item.type}' was provided without its required 'reasoning' item: '${needed}'.`;
      }
      calls.set(String(item.call_id), item.type);
    }
    const imageProblem = responsesImageError(item);
    if (imageProblem) return imageProblem;
    if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
      const kind = item.type === 'function_call_output' ? 'function call' : 'custom tool call';
      const call = calls.get(String(item.call_id));
      if (call !== item.type.replace(/_output$/, ''))
        return `No tool call found for ${kind} output with call_id ${String(item.call_id)}.`;
      calls.delete(String(item.call_id));
    }
  }
  const [pending] = calls.keys();
  if (pending) return `No tool output found for function call ${pending}.`;
  return undefined;
}

function validateChat(body: OpenAIRequestBody): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'you must provide a model parameter';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return "'messages' must contain at least one message";
  const messages = body.messages as Item[];
  for (const tool of (body.tools as Item[] | undefined) ?? []) {
    const fn = tool.function as Item | undefined;
    if (tool.type !== 'function' || !fn || typeof fn.name !== 'string')
      return "Missing required parameter: 'tools[0].function'.";
  }
  for (const [i, m] of messages.entries()) {
    const imageProblem = chatImageError(m, i);
    if (imageProblem) return imageProblem;
    if (m.role === 'tool') {
      let j = i - 1;
      while (j >= 0 && messages[j]?.role === 'tool') j--;
      const owner = messages[j];
      const ids = ((owner?.tool_calls as Item[] | undefined) ?? []).map((c) => c.id);
      if (owner?.role !== 'assistant' || !ids.includes(m.tool_call_id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
    }
    if (m.role === 'assistant' && Array.isArray(m.tool_calls)) {
      const answered: unknown[] = [];
      for (let k = i + 1; messages[k]?.role === 'tool'; k++) answered.push(messages[k]?.tool_call_id);
      const missing = (m.tool_calls as Item[]).filter((c) => !answered.includes(c.id));
      if (missing.length > 0) {
        return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.map((c) => String(c.id)).join(', ')}`;
      }
    }
  }
  return undefined;
}

function argumentFragments(reply: ReplyOptions, index: number, args: string): string[] {
  return reply.rawArguments?.[index] ?? split(args, reply.argChunk ?? 3);
}

function argString(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function writeResponsesStream(
  res: ServerResponse,
  body: OpenAIRequestBody,
  reply: ReplyOptions,
  n: number,
  inputTokens: number,
  reasoningFor: Map<string, string>,
): void {
  let seq = 0;
  const send = (event: Record<string, unknown> & { type: string }) =>
    res.write(`event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: seq++ })}\n\n`);
  const id = `resp_fake_${n}`;
  const base = {
    id,
    object: 'response',
    created_at: 1765552659,
    model: body.model,
    output: [] as Item[],
    error: null,
    incomplete_details: null,
  };
  send({ type: 'response.created', response: { ...base, status: 'in_progress' } });
  send({ type: 'response.in_progress', response: { ...base, status: 'in_progress' } });
  const output: Item[] = [];
  let reasoningId: string | undefined;
  if (reply.reasoning) {
    reasoningId = `rs_fake_${n}`;
    // The API returns the encrypted reasoning only when asked for it, whatever `store` says.
    const encrypted = ((body.include as unknown[] | undefined) ?? []).includes('reasoning.encrypted_content');
    const item = {
      id: reasoningId,
      type: 'reasoning',
      ...(encrypted && { encrypted_content: `enc_${n}` }),
      summary: [{ type: 'summary_text', text: reply.reasoning }],
    };
    send({ type: 'response.output_item.added', output_index: output.length, item: { ...item, summary: [] } });
    writeReasoningSummary(send, reasoningId, output.length, reply.reasoning);
    send({ type: 'response.output_item.done', output_index: output.length, item });
    output.push(item);
  }
  if (reply.text) {
    const index = output.length;
    const itemId = `msg_fake_${n}`;
    send({
      type: 'response.output_item.added',
      output_index: index,
      item: { id: itemId, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    send({
      type: 'response.content_part.added',
      item_id: itemId,
      output_index: index,
      content_index: 0,
      part: { type: 'output_text', annotations: [], text: '' },
    });
    for (const delta of split(reply.text, 7)) {
      send({
        type: 'response.output_text.delta',
        item_id: itemId,
        output_index: index,
        content_index: 0,
        delta,
        logprobs: [],
      });
      if (reply.stall || faulted(res, reply, () => send(responsesError(reply)))) return;
    }
    send({
      type: 'response.output_text.done',
      item_id: itemId,
      output_index: index,
      content_index: 0,
      text: reply.text,
      logprobs: [],
    });
    const item = {
      id: itemId,
      type: 'message',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', annotations: [], logprobs: [], text: reply.text }],
    };
    send({ type: 'response.output_item.done', output_index: index, item });
    output.push(item);
  }
  for (const [k, call] of (reply.toolCalls ?? []).entries()) {
    const index = output.length;
    const itemId = `fc_fake_${n}_${k}`;
    const callId = call.callId ?? `call_fake_${n}_${k}`;
    if (reasoningId) reasoningFor.set(callId, reasoningId);
    const args = argString(call.arguments);
    const fragments = argumentFragments(reply, k, args);
    if (call.custom) {
      const item = writeCustomToolCall(send, {
        index,
        itemId: `ctc_fake_${n}_${k}`,
        callId,
        name: call.name,
        fragments,
      });
      if (reply.stall || faulted(res, reply, () => send(responsesError(reply)))) return;
      send({ type: 'response.output_item.done', output_index: index, item });
      output.push(item);
      continue;
    }
    send({
      type: 'response.output_item.added',
      output_index: index,
      item: {
        id: itemId,
        type: 'function_call',
        status: 'in_progress',
        arguments: '',
        call_id: callId,
        name: call.name,
      },
    });
    for (const delta of fragments)
      send({ type: 'response.function_call_arguments.delta', item_id: itemId, output_index: index, delta });
    if (reply.stall || faulted(res, reply, () => send(responsesError(reply)))) return;
    const full = fragments.join('');
    send({ type: 'response.function_call_arguments.done', item_id: itemId, output_index: index, arguments: full });
    const item = {
      id: itemId,
      type: 'function_call',
      status: 'completed',
      arguments: full,
      call_id: callId,
      name: call.name,
    };
    send({ type: 'response.output_item.done', output_index: index, item });
    output.push(item);
  }
  const outputTokens = reply.outputTokens ?? Math.ceil(JSON.stringify(output).length / 4);
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
  if (reply.truncated) {
    send({
      type: 'response.incomplete',
      response: { ...base, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output, usage },
    });
  } else send({ type: 'response.completed', response: { ...base, status: 'completed', output, usage } });
  res.end();
}

type SendEvent = (event: Record<string, unknown> & { type: string }) => void;

/** A reasoning item's summary, streamed as the API streams it (one summary part, its text in deltas). */
function writeReasoningSummary(send: SendEvent, itemId: string, index: number, text: string): void {
  const at = { item_id: itemId, output_index: index, summary_index: 0 };
  send({ type: 'response.reasoning_summary_part.added', ...at, part: { type: 'summary_text', text: '' } });
  for (const delta of split(text, 7)) send({ type: 'response.reasoning_summary_text.delta', ...at, delta });
  send({ type: 'response.reasoning_summary_text.done', ...at, text });
  send({ type: 'response.reasoning_summary_part.done', ...at, part: { type: 'summary_text', text } });
}

/** A custom tool call's item and input deltas (its `output_item.done` is the caller's, after any fault). */
function writeCustomToolCall(
  send: SendEvent,
  call: { index: number; itemId: string; callId: string; name: string; fragments: string[] },
): Item {
  const item = {
    id: call.itemId,
    type: 'custom_tool_call',
    status: 'in_progress',
    call_id: call.callId,
    name: call.name,
  };
  send({ type: 'response.output_item.added', output_index: call.index, item: { ...item, input: '' } });
  for (const delta of call.fragments)
    send({ type: 'response.custom_tool_call_input.delta', item_id: call.itemId, output_index: call.index, delta });
  const input = call.fragments.join('');
  send({ type: 'response.custom_tool_call_input.done', item_id: call.itemId, output_index: call.index, input });
  return { ...item, status: 'completed', input };
}

function writeChatStream(
  res: ServerResponse,
  body: OpenAIRequestBody,
  reply: ReplyOptions,
  n: number,
  inputTokens: number,
): void {
  const id = `chatcmpl-fake${n}`;
  const send = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1711357598, model: body.model, system_fingerprint: 'fp_fake', choices, ...extra })}\n\n`,
    );
  const choice = (delta: unknown, finish: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finish,
  });
  send([choice({ role: 'assistant', content: reply.text ? '' : null })]);
  let outputChars = 0;
  for (const delta of split(reply.text ?? '', 7)) {
    if (!delta) continue;
    outputChars += delta.length;
    send([choice({ content: delta })]);
    if (reply.stall || faulted(res, reply, () => res.write(chatError(reply)))) return;
  }
  for (const [k, call] of (reply.toolCalls ?? []).entries()) {
    const callId = call.callId ?? `call_fake_${n}_${k}`;
    send([
      choice({
        tool_calls: [{ index: k, id: callId, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    ]);
    for (const fragment of argumentFragments(reply, k, argString(call.arguments))) {
      outputChars += fragment.length;
      send([choice({ tool_calls: [{ index: k, function: { arguments: fragment } }] })]);
    }
    if (reply.stall || faulted(res, reply, () => res.write(chatError(reply)))) return;
  }
  const finish = reply.truncated ? 'length' : (reply.toolCalls ?? []).length > 0 ? 'tool_calls' : 'stop';
  send([choice({}, finish)]);
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  if (streamOptions?.include_usage) {
    const outputTokens = Math.ceil(outputChars / 4);
    send([], {
      usage: {
        prompt_tokens: inputTokens,
        completion_tokens: outputTokens,
        total_tokens: inputTokens + outputTokens,
        prompt_tokens_details: { cached_tokens: 0 },
      },
    });
  }
  res.write('data: [DONE]\n\n');
  res.end();
}

/** A mid-stream fault after the first delta: the error written (then the end), or the stream fault applied. */
function faulted(res: ServerResponse, reply: ReplyOptions, writeError: () => void): boolean {
  if (reply.midStreamError) {
    writeError();
    res.end();
    return true;
  }
  return applyStreamFault(res, reply.fault);
}

/** The Responses API's `error` stream event (its fields are the error's own, not nested). */
function responsesError(reply: ReplyOptions): Record<string, unknown> & { type: string } {
  return {
    type: 'error',
    code: reply.midStreamError,
    message: 'The server had an error while processing your request.',
    param: null,
  };
}

/** A Chat Completions error chunk: data-only, like every chunk, with the error object. */
function chatError(reply: ReplyOptions): string {
  const error = {
    message: 'The server had an error while processing your request.',
    type: reply.midStreamError,
    param: null,
    code: null,
  };
  return `data: ${JSON.stringify({ error })}\n\n`;
}

function split(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  code?: string | null,
  param?: string | null,
): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { message, type, param: param ?? null, code: code ?? null } }));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** A tool result as the model receives it, read from the wire format. */
export type WireToolResult = { callId: string; isError: boolean; text: string };

/**
 * The tool results in a Responses or Chat Completions request. Neither API has an error field on a
 * tool output, so a failed call is marked in its text: Patchbay prefixes it with "Error: ", the
 * convention OpenAI's own agents use, and that marker is what the model sees.
 */
export function toolResultsIn(endpoint: 'responses' | 'chat', body: OpenAIRequestBody): WireToolResult[] {
  const read = (callId: unknown, text: unknown) => {
    const value = typeof text === 'string' ? text : JSON.stringify(text);
    return { callId: String(callId), isError: value.startsWith('Error: '), text: value };
  };
  if (endpoint === 'responses') {
    return ((body.input as Item[] | undefined) ?? [])
      .filter((i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output')
      .map((i) => read(i.call_id, i.output));
  }
  return ((body.messages as Item[] | undefined) ?? [])
    .filter((m) => m.role === 'tool')
    .map((m) => read(m.tool_call_id, m.content));
}
