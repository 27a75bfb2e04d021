import { anthropicMaxImageBytes, anthropicRequestImageError, imageError } from './image-rules.ts';
import { createHash } from 'node:crypto';
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
import { anthropicChaos } from './model-chaos.ts';

/**
 * A loopback Anthropic Messages API (wire-formats §4): JSON and SSE replies, the API's error
 * bodies, and prompt caching computed from the cache_control breakpoints it receives. It rejects
 * what the real API rejects: missing auth or anthropic-version, a tool_result without its tool_use,
 * a tool_use left without a result, empty text blocks, more than four breakpoints.
 */
export type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id?: string; name: string; input: unknown };

export type AnthropicReply =
  | {
      kind?: 'message';
      content: AnthropicBlock[];
      stopReason?: string;
      outputTokens?: number;
      /** Send these strings as the input_json_delta fragments of tool block N, instead of splitting. */
      rawArguments?: Record<number, string[]>;
      /** Fragment size when splitting tool arguments (default 3: splits escapes and numbers). */
      argChunk?: number;
      /** Stop writing after the first content delta and keep the connection open. */
      stall?: boolean;
      /** After the first content delta: end without message_stop (cut), reset the connection (drop) or stall. */
      fault?: StreamFault;
      /** After the first text delta, wait for this before streaming the rest (a slow model, held by the test). */
      hold?: Promise<unknown> | undefined;
      /** After the first content block, send `event: error` with this error type. */
      midStreamError?: string;
      /** Each stream event this long after the one before (a slow answer that never goes quiet). */
      trickleMs?: number;
    }
  /** 429 rate_limit_error, 529 overloaded_error, 5xx api_error…, with the headers given (retry-after, …). */
  | { kind: 'error'; status: number; type: string; message: string; headers?: Record<string, string> }
  | ConnectionFault
  /** Replays recorded stream events (one JSON object per line, as in @ai-sdk/anthropic fixtures). */
  | { kind: 'recorded'; lines: string[] };

export type AnthropicRequest = {
  model: string;
  max_tokens: number;
  system?: string | Array<{ type: 'text'; text: string; cache_control?: unknown }>;
  tools?: Array<{ name: string; description?: string; input_schema: Record<string, unknown>; cache_control?: unknown }>;
  messages: Array<{ role: 'user' | 'assistant'; content: string | Array<Record<string, unknown> & { type: string }> }>;
  stream?: boolean;
};

export type RecordedCall = {
  headers: IncomingMessage['headers'];
  body: AnthropicRequest;
  usage?: CacheUsage;
};

export type CacheUsage = { input_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number };

export type FakeAnthropicOptions = {
  script: (request: AnthropicRequest, callIndex: number) => AnthropicReply | Promise<AnthropicReply>;
  apiKey?: string;
  /** Mount point, e.g. '/zen' for OpenCode Zen's /zen/v1/messages. */
  pathPrefix?: string;
  /** Zen's Messages route reads only x-api-key. */
  auth?: 'bearer-or-x-api-key' | 'x-api-key-only';
  /** Transient faults at a rate in place of the script's answers (model-chaos.ts). */
  chaos?: Chaos;
  /** What a request concerns, for the chaos's record (e.g. the task it carries); none when not given. */
  chaosSubject?: (request: AnthropicRequest) => string | undefined;
};

export type FakeAnthropic = {
  /** Base URL for the SDK (no /v1). */
  baseUrl: string;
  calls: RecordedCall[];
  /** Requests rejected for breaking the API's rules, with the reason sent back. */
  rejections: string[];
  close(): Promise<void>;
};

export async function startFakeAnthropic(options: FakeAnthropicOptions): Promise<FakeAnthropic> {
  const apiKey = options.apiKey ?? 'test-anthropic-key';
  const prefix = options.pathPrefix ?? '';
  const calls: RecordedCall[] = [];
  const rejections: string[] = [];
  const cache = new Set<string>();
  let messageCounter = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, 'api_error', String(error));
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== `${prefix}/v1/messages`) {
      return sendError(res, 404, 'not_found_error', `Not found: ${req.method} ${req.url}`);
    }
    const reject = (status: number, type: string, message: string) => {
      rejections.push(message);
      sendError(res, status, type, message);
    };
    const xKey = req.headers['x-api-key'];
    const bearer = req.headers.authorization;
    const authOk = xKey === apiKey || (options.auth !== 'x-api-key-only' && bearer === `Bearer ${apiKey}`);
    if (!authOk) return reject(401, 'authentication_error', 'invalid x-api-key');
    // "a 32MB request size limit for standard endpoints" (docs.anthropic.com/en/docs/vision), refused as recorded.
    if (Buffer.byteLength(raw) > 32 * 1024 * 1024)
      return reject(413, 'request_too_large', 'Request exceeds the maximum size');
    if (!req.headers['anthropic-version'])
      return reject(400, 'invalid_request_error', 'anthropic-version: header is required');
    let body: AnthropicRequest;
    try {
      body = JSON.parse(raw) as AnthropicRequest;
    } catch {
      return reject(400, 'invalid_request_error', 'Request body is not valid JSON');
    }
    const problem = validate(body) ?? (await anthropicRequestImageError(body.messages));
    if (problem) return reject(400, 'invalid_request_error', problem);

    const call: RecordedCall = { headers: req.headers, body };
    calls.push(call);
    const scripted = await options.script(body, calls.length - 1);
    const reply = await anthropicChaos(options.chaos, scripted, body.stream === true, options.chaosSubject?.(body));
    if (reply.kind === 'error') {
      for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
      return sendError(res, reply.status, reply.type, reply.message);
    }
    if (reply.kind === 'drop' || reply.kind === 'hang') return applyConnectionFault(res, reply);
    if (reply.kind === 'recorded')
      return writeSse(
        res,
        reply.lines.map((l) => JSON.parse(l) as { type: string }),
      );

    const usage = computeCacheUsage(body, cache);
    call.usage = usage;
    const id = `msg_fake_${++messageCounter}`;
    let toolCounter = 0;
    const content = reply.content.map((b) =>
      b.type === 'tool_use' ? { ...b, id: b.id ?? `toolu_fake_${messageCounter}_${toolCounter++}` } : b,
    );
    const hasTool = content.some((b) => b.type === 'tool_use');
    const stopReason = reply.stopReason ?? (hasTool ? 'tool_use' : 'end_turn');
    const outputTokens = reply.outputTokens ?? Math.ceil(JSON.stringify(content).length / 4);
    const message = { id, type: 'message', role: 'assistant', model: body.model, stop_sequence: null, container: null };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${id}` });
      res.end(
        JSON.stringify({
          ...message,
          content,
          stop_reason: stopReason,
          usage: { ...usage, output_tokens: outputTokens },
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    if (reply.trickleMs) trickle(res, reply.trickleMs);
    const send = (event: { type: string }) => res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    send({
      type: 'message_start',
      message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } },
    } as never);
    send({ type: 'ping' });
    for (const [index, block] of content.entries()) {
      if (block.type === 'text') {
        send({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } } as never);
        for (const piece of split(block.text, 7)) {
          send({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } } as never);
          if (reply.stall) return; // the client's abort closes the socket
          if (applyStreamFault(res, reply.fault)) return;
          if (reply.hold) {
            await reply.hold;
            reply.hold = undefined;
          }
        }
      } else {
        send({
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
        } as never);
        const fragments = reply.rawArguments?.[index] ?? [
          '',
          ...split(JSON.stringify(block.input), reply.argChunk ?? 3),
        ];
        for (const partial of fragments)
          send({
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: partial },
          } as never);
        if (reply.stall || applyStreamFault(res, reply.fault)) return;
      }
      send({ type: 'content_block_stop', index } as never);
      if (reply.midStreamError) {
        const message = reply.midStreamError === 'overloaded_error' ? 'Overloaded' : 'Internal server error';
        send({ type: 'error', error: { type: reply.midStreamError, message } } as never);
        res.end();
        return;
      }
    }
    send({
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { ...usage, output_tokens: outputTokens },
    } as never);
    send({ type: 'message_stop' });
    res.end();
  }

  const { port, close } = await listenOnLoopback(server);
  return {
    baseUrl: `http://127.0.0.1:${port}${prefix}`,
    calls,
    rejections,
    close,
  };
}

/** An image block (or a tool result holding some): base64 only, user turns only, within the caps. */
function anthropicImageError(block: Record<string, unknown>, role: string, where: string): string | undefined {
  const images =
    block.type === 'image'
      ? [block]
      : block.type === 'tool_result' && Array.isArray(block.content)
        ? (block.content as Record<string, unknown>[]).filter((b) => b.type === 'image')
        : [];
  for (const image of images) {
    if (role !== 'user') return `${where}: image blocks are only allowed in user messages`;
    const source = image.source as Record<string, unknown> | undefined;
    if (source?.type !== 'base64') return `${where}.image.source.type: Input should be 'base64', 'url' or 'file'`;
    // Anthropic measures the base64 text (a 4.5 MB PNG is 6.0 MB of base64 and is refused).
    const problem = imageError(
      source.media_type,
      source.data,
      anthropicMaxImageBytes,
      `${where}.image.source.base64`,
      'base64',
    );
    if (problem) return problem;
  }
  return undefined;
}

/** The Messages API's structural rules that matter for a tool loop. */
export function validate(body: AnthropicRequest): string | undefined {
  if (typeof body.model !== 'string' || !body.model) return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  if (body.messages[0]?.role !== 'user') return 'messages: first message must use the "user" role';
  for (const tool of body.tools ?? []) {
    if (!/^[a-zA-Z0-9_-]{1,128}$/.test(tool.name)) return `tools: invalid tool name ${tool.name}`;
    if (tool.input_schema?.type !== 'object') return `tools.${tool.name}.input_schema.type: Input should be 'object'`;
  }
  let breakpoints = 0;
  const countCache = (b: object) => {
    if ((b as { cache_control?: unknown }).cache_control) breakpoints++;
  };
  (body.tools ?? []).forEach(countCache);
  if (Array.isArray(body.system)) body.system.forEach(countCache);
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== 'user' && m.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (typeof m.content === 'string') {
      if (!m.content) return `messages.${i}: text content blocks must be non-empty`;
      continue;
    }
    m.content.forEach(countCache);
    for (const [j, b] of m.content.entries()) {
      if (b.type === 'text' && !b.text) return `messages.${i}: text content blocks must be non-empty`;
      const imageProblem = anthropicImageError(b, m.role, `messages.${i}.content.${j}`);
      if (imageProblem) return imageProblem;
      if (b.type === 'tool_use' && (typeof b.input !== 'object' || b.input === null || Array.isArray(b.input))) {
        return `messages.${i}: tool_use.input: Input should be a valid dictionary`;
      }
    }
    const prev = body.messages[i - 1];
    const uses =
      prev && prev.role === 'assistant' && Array.isArray(prev.content)
        ? prev.content.filter((b) => b.type === 'tool_use')
        : [];
    const results = m.content.filter((b) => b.type === 'tool_result');
    const badFlag = results.find((r) => r.is_error !== undefined && typeof r.is_error !== 'boolean');
    if (badFlag) return `messages.${i}.content: tool_result.is_error: Input should be a valid boolean`;
    if (m.role === 'user') {
      for (const r of results) {
        if (!uses.some((u) => u.id === r.tool_use_id)) {
          return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(r.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
        }
      }
      const firstOther = m.content.findIndex((b) => b.type !== 'tool_result');
      if (firstOther !== -1 && m.content.slice(firstOther).some((b) => b.type === 'tool_result')) {
        return `messages.${i}.content: tool_result blocks must come before any other content`;
      }
    }
    if (m.role === 'assistant') {
      const next = body.messages[i + 1];
      const ids = m.content.filter((b) => b.type === 'tool_use').map((b) => b.id);
      const answered =
        next && Array.isArray(next.content)
          ? next.content.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id)
          : [];
      const missing = ids.filter((id) => !answered.includes(id));
      if (missing.length > 0 && next) {
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}`;
      }
      if (missing.length > 0 && !next)
        return `messages.${i}: the final assistant message cannot contain tool_use without results`;
    }
  }
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  return undefined;
}

/**
 * Prompt caching as the API bills it: the prompt is tools, then system, then message blocks. A
 * prefix ending at a breakpoint that an earlier request wrote is read; the prompt up to the last
 * breakpoint beyond it is written; the rest is plain input. Tokens are estimated at 4 chars each.
 */
export function computeCacheUsage(body: AnthropicRequest, cache: Set<string>): CacheUsage {
  const blocks: Array<{ tokens: number; breakpoint: boolean; key: string }> = [];
  const add = (block: Record<string, unknown>) => {
    const { cache_control, ...rest } = block;
    const key = JSON.stringify(rest);
    blocks.push({ tokens: Math.ceil(key.length / 4), breakpoint: Boolean(cache_control), key });
  };
  add({ model: body.model });
  for (const tool of body.tools ?? []) add(tool);
  if (typeof body.system === 'string') add({ type: 'text', text: body.system });
  else for (const b of body.system ?? []) add(b);
  for (const m of body.messages) {
    if (typeof m.content === 'string') add({ role: m.role, type: 'text', text: m.content });
    else for (const b of m.content) add({ role: m.role, ...b });
  }
  const hash = createHash('sha256');
  const prefixKeys: string[] = [];
  for (const b of blocks) {
    hash.update(b.key);
    prefixKeys.push(hash.copy().digest('hex'));
  }
  let readEnd = -1;
  let lastBreakpoint = -1;
  blocks.forEach((b, i) => {
    if (!b.breakpoint) return;
    lastBreakpoint = i;
    if (cache.has(prefixKeys[i] ?? '')) readEnd = i;
  });
  const sum = (from: number, to: number) => blocks.slice(from, to + 1).reduce((n, b) => n + b.tokens, 0);
  blocks.forEach((b, i) => {
    if (b.breakpoint) cache.add(prefixKeys[i] ?? '');
  });
  return {
    cache_read_input_tokens: sum(0, readEnd),
    cache_creation_input_tokens: lastBreakpoint > readEnd ? sum(readEnd + 1, lastBreakpoint) : 0,
    input_tokens: sum(lastBreakpoint + 1, blocks.length - 1),
  };
}

function split(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length > 0 ? out : [''];
}

function writeSse(res: ServerResponse, events: Array<{ type: string }>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_fake_error' });
  res.end(JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_fake_error' }));
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
 * The tool results in a Messages request: Anthropic marks a failed call with `is_error: true` on
 * its `tool_result` block, and that flag is what the model sees.
 */
export function toolResultsIn(body: AnthropicRequest): WireToolResult[] {
  return body.messages.flatMap((m) =>
    Array.isArray(m.content)
      ? m.content
          .filter((b) => b.type === 'tool_result')
          .map((b) => ({
            callId: String(b.tool_use_id),
            isError: b.is_error === true,
            text:
              typeof b.content === 'string'
                ? b.content
                : Array.isArray(b.content)
                  ? (b.content as { text?: string }[]).map((c) => c.text ?? '').join('')
                  : '',
          }))
      : [],
  );
}
