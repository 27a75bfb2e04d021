import OpenAI from 'openai';

export type OpenAIClientOptions = {
  /** Absent for keyless local servers (Ollama, LM Studio): no Authorization header is sent. */
  apiKey?: string | undefined;
  /** Includes `/v1`. */
  baseUrl: string;
  fetch?: typeof fetch | undefined;
};

/**
 * Every option is explicit so the SDK never reads OPENAI_* from the environment. The SDK's own
 * retries are off: ours (retry-policy.ts) keep the policy in one place and see mid-stream faults.
 */
export function createOpenAIClient(options: OpenAIClientOptions): OpenAI {
  return new OpenAI({
    apiKey: options.apiKey ?? 'no-key',
    organization: null,
    project: null,
    webhookSecret: null,
    baseURL: options.baseUrl,
    maxRetries: 0,
    ...(options.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
