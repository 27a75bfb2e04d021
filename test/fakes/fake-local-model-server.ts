import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startFakeOpenAI, type FakeOpenAI, type OpenAIScript } from './fake-openai.ts';
import { listenOnLoopback } from './loopback.ts';

/**
 * A self-hosted OpenAI-compatible model server on loopback, as vLLM, llama.cpp's server or Ollama
 * behave in front of the Chat Completions stream the OpenAI fake writes:
 * - each states its context where it really does: vLLM `max_model_len` in GET /v1/models,
 *   llama.cpp `default_generation_settings.n_ctx` in GET /props (and `meta.n_ctx_train` in its
 *   model list), Ollama `num_ctx` in the parameters of POST /api/show;
 * - each refuses an over-long request in its own words: vLLM when prompt + max_tokens passes the
 *   window ("This model's maximum context length is N tokens. However, you requested M tokens
 *   (X in the messages, Y in the completion)…"), llama.cpp when the prompt alone fills it
 *   (`exceed_context_size_error` with n_prompt_tokens and n_ctx); Ollama truncates silently, as it does;
 * - `tools: 'none'`: vLLM started without --enable-auto-tool-choice refuses tool_choice "auto";
 * - `forcedToolChoice: 'ignored'`: the server drops a named tool_choice (Ollama), so the model may answer in text;
 *   'refused': Ollama serving a model without tool support refuses any request that names tools ("… does not support tools");
 * - `streams: false`: the server answers a streamed request with one JSON completion.
 * Tokens are counted as `charsPerToken` characters of the messages and tools (a real tokenizer's
 * count differs from Patchbay's estimate, which is the point of a different ratio).
 */
export type LocalServerFlavor = 'vllm' | 'llama.cpp' | 'ollama';

export type FakeLocalModelServerOptions = {
  flavor: LocalServerFlavor;
  model: string;
  contextWindow: number;
  chat: OpenAIScript;
  charsPerToken?: number;
  tools?: 'auto' | 'none';
  forcedToolChoice?: 'honoured' | 'ignored' | 'refused';
  streams?: boolean;
};

export type FakeLocalModelServer = {
  /** Includes /v1. */
  baseUrl: string;
  /** Requests the server refused, with its message: assert empty where nothing should be refused. */
  refusals: string[];
  /** The completions it served (after any tool_choice it dropped). */
  calls: FakeOpenAI['calls'];
  promptTokens(body: Record<string, unknown>): number;
  close(): Promise<void>;
};

export async function startFakeLocalModelServer(options: FakeLocalModelServerOptions): Promise<FakeLocalModelServer> {
  const inner = await startFakeOpenAI({ chat: options.chat, apiKey: null });
  const refusals: string[] = [];
  const perToken = options.charsPerToken ?? 4;
  const promptTokens = (body: Record<string, unknown>) =>
    Math.ceil((JSON.stringify(body.messages ?? []).length + JSON.stringify(body.tools ?? []).length) / perToken);

  const server = createServer((req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = req.url ?? '';
    if (req.method === 'GET' && path === '/v1/models') return json(res, 200, modelList(options));
    if (req.method === 'GET' && path === '/props' && options.flavor === 'llama.cpp')
      return json(res, 200, {
        default_generation_settings: { n_ctx: options.contextWindow, params: { n_predict: -1 } },
        total_slots: 1,
        model_path: `/models/${options.model}.gguf`,
      });
    if (req.method === 'POST' && path === '/api/show' && options.flavor === 'ollama')
      return json(res, 200, {
        parameters: `num_ctx ${options.contextWindow}\nstop "<|im_end|>"`,
        model_info: { 'general.architecture': 'qwen3', 'qwen3.context_length': 40_960 },
      });
    if (req.method !== 'POST' || path !== '/v1/chat/completions') return json(res, 404, { detail: 'Not Found' });
    const body = JSON.parse(raw) as Record<string, unknown>;
    const refusal = refuse(body);
    if (refusal) {
      refusals.push(refusal.error.message);
      return json(res, 400, refusal);
    }
    if (options.forcedToolChoice === 'ignored' && typeof body.tool_choice === 'object') body.tool_choice = 'auto';
    if (options.streams === false) return answerWhole(res, inner, body);
    const upstream = await fetch(`${inner.baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify(body) });
    res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'text/event-stream' });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  }

  function refuse(body: Record<string, unknown>): { error: Record<string, unknown> & { message: string } } | undefined {
    if (body.model !== options.model)
      return err(`The model \`${String(body.model)}\` does not exist.`, 'NotFoundError', 404);
    if (options.forcedToolChoice === 'refused' && (body.tools !== undefined || body.tool_choice !== undefined))
      return err(`${options.model} does not support tools`, 'BadRequestError');
    if (options.tools === 'none' && Array.isArray(body.tools) && body.tool_choice === 'auto')
      return err(
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        'BadRequestError',
      );
    const prompt = promptTokens(body);
    const completion = typeof body.max_tokens === 'number' ? body.max_tokens : 0;
    if (options.flavor === 'vllm' && prompt + completion > options.contextWindow)
      return err(
        `This model's maximum context length is ${options.contextWindow} tokens. However, you requested ${prompt + completion} tokens (${prompt} in the messages, ${completion} in the completion). Please reduce the length of the messages or completion.`,
        'BadRequestError',
      );
    if (options.flavor === 'llama.cpp' && prompt >= options.contextWindow)
      return {
        error: {
          code: 400,
          message: `request (${prompt} tokens) exceeds the available context size (${options.contextWindow} tokens), try increasing it`,
          type: 'exceed_context_size_error',
          n_prompt_tokens: prompt,
          n_ctx: options.contextWindow,
        },
      };
    return undefined;
  }

  const { port, close } = await listenOnLoopback(server);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    refusals,
    calls: inner.calls,
    promptTokens,
    close: async () => {
      await close();
      await inner.close();
    },
  };
}

function err(message: string, type: string, code = 400) {
  return { error: { message, type, param: null, code } };
}

function modelList(options: FakeLocalModelServerOptions): Record<string, unknown> {
  const entry: Record<string, unknown> = { id: options.model, object: 'model', created: 1_765_552_659 };
  if (options.flavor === 'vllm')
    Object.assign(entry, { owned_by: 'vllm', root: options.model, parent: null, max_model_len: options.contextWindow });
  if (options.flavor === 'llama.cpp')
    Object.assign(entry, { owned_by: 'llamacpp', meta: { n_ctx_train: 40_960, n_vocab: 151_936 } });
  if (options.flavor === 'ollama') Object.assign(entry, { owned_by: 'library' });
  return { object: 'list', data: [entry] };
}

/** A server that does not stream: the streamed completion, gathered into one chat.completion. */
async function answerWhole(res: ServerResponse, inner: FakeOpenAI, body: Record<string, unknown>): Promise<void> {
  const upstream = await fetch(`${inner.baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify(body) });
  const chunks = (await upstream.text())
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)) as { choices: Array<{ delta: { content?: string }; finish_reason?: string }> });
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  const finish = chunks.map((c) => c.choices[0]?.finish_reason).find(Boolean) ?? 'stop';
  json(res, 200, {
    id: 'chatcmpl-whole',
    object: 'chat.completion',
    created: 1_765_552_659,
    model: body.model,
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish }],
    usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
