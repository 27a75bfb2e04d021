/**
 * What an OpenAI-compatible server says about the model it serves, each in its own place:
 * vLLM's `GET /v1/models` (`max_model_len`), llama.cpp's `GET /props` (the running context,
 * `default_generation_settings.n_ctx`, and its reply cap `n_predict` when set; its `/v1/models`
 * gives only `meta.n_ctx_train`, the trained size, used when `/props` is missing), and Ollama's
 * `POST /api/show` (`num_ctx` among the model's parameters; the model's trained `context_length`
 * is not what Ollama runs with, so without `num_ctx` nothing is stated).
 */
export type ServerLimits = {
  contextWindow?: number;
  maxOutputTokens?: number;
  /** Which answer said it, for logs and `doctor`. */
  source?: string;
  /** Whether the model is among those the server lists (undefined when it lists none). */
  modelListed?: boolean;
  /** The ids the server lists, for a "wrong model" diagnosis. */
  models?: string[];
};

export type ServerLimitsInput = {
  /** Includes `/v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string | undefined;
  fetch?: typeof fetch | undefined;
  signal: AbortSignal;
};

type Json = Record<string, unknown>;

/** Never throws: a server that answers none of these states nothing. */
export async function discoverServerLimits(input: ServerLimitsInput): Promise<ServerLimits> {
  const base = input.baseUrl.replace(/\/+$/, '');
  const root = base.replace(/\/v1$/, '');
  const get = (url: string, init?: RequestInit) => getJson(url, input, init);
  const listed = await get(`${base}/models`);
  const entries = Array.isArray(listed?.data) ? (listed.data as Json[]) : undefined;
  const entry = entries?.find((m) => m.id === input.model);
  const found: ServerLimits = {
    ...(entries && { modelListed: entry !== undefined, models: entries.map((m) => String(m.id)) }),
  };
  const vllm = positive(entry?.max_model_len);
  if (vllm) return { ...found, contextWindow: vllm, source: 'max_model_len in /v1/models' };
  const props = await get(`${root}/props`);
  const settings = props?.default_generation_settings as Json | undefined;
  const nCtx = positive(settings?.n_ctx) ?? positive(props?.n_ctx);
  if (nCtx) {
    const nPredict = positive((settings?.params as Json | undefined)?.n_predict) ?? positive(settings?.n_predict);
    return { ...found, contextWindow: nCtx, ...(nPredict && { maxOutputTokens: nPredict }), source: 'n_ctx in /props' };
  }
  const trained = positive((entry?.meta as Json | undefined)?.n_ctx_train);
  if (trained) return { ...found, contextWindow: trained, source: 'meta.n_ctx_train in /v1/models' };
  const show = await get(`${root}/api/show`, { method: 'POST', body: JSON.stringify({ model: input.model }) });
  const numCtx = typeof show?.parameters === 'string' ? /^num_ctx\s+(\d+)/m.exec(show.parameters)?.[1] : undefined;
  if (numCtx) return { ...found, contextWindow: Number(numCtx), source: 'num_ctx in /api/show' };
  return found;
}

async function getJson(url: string, input: ServerLimitsInput, init: RequestInit = {}): Promise<Json | undefined> {
  try {
    const response = await (input.fetch ?? fetch)(url, {
      ...init,
      headers: {
        accept: 'application/json',
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...(input.apiKey ? { authorization: `Bearer ${input.apiKey}` } : {}),
      },
      signal: AbortSignal.any([input.signal, AbortSignal.timeout(10_000)]),
    });
    if (!response.ok) return undefined;
    const body: unknown = await response.json();
    return typeof body === 'object' && body !== null ? (body as Json) : undefined;
  } catch {
    return undefined;
  }
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}
