import OpenAI from 'openai';

export type OpenAIClientOptions = {
  /** Absent for keyless local servers (Ollama, LM Studio): no Authorization header is sent. */
  apiKey?: string | undefined;
  /** Includes `/v1`. */
  baseUrl: string;
  maxRetries?: number | undefined;
  fetch?: typeof fetch | undefined;
};

/**
 * Every option is explicit so the SDK never reads OPENAI_* from the environment. The SDK retries
 * 408/409/429/5xx and honours retry-after and retry-after-ms.
 */
export function createOpenAIClient(options: OpenAIClientOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey ?? 'no-key',
    organization: null,
    project: null,
    webhookSecret: null,
    baseURL: options.baseUrl,
    maxRetries: options.maxRetries ?? 2,
    ...(options.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
