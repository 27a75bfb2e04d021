import { createDefaultTools } from '../agent/default-tools.ts';
import { createToolRegistry } from '../agent/tool-registry.ts';
import { describeError } from '../core/errors.ts';
import { createModelProvider } from '../models/create-model-provider.ts';
import { estimateRequestTokens } from '../models/model-limits.ts';
import type { ModelProvider, ToolSpec } from '../models/model-provider.ts';
import { discoverServerLimits } from '../models/server-limits.ts';
import type { DoctorDeps, DoctorRow } from './doctor-checks.ts';

const ok = (detail: string): DoctorRow => ({ check: 'model', ok: true, detail });
const bad = (detail: string, fix: string): DoctorRow => ({ check: 'model', ok: false, detail, fix });

/** Room a run needs beside the tool definitions: the system prompt, the task and a reply. */
const roomBesideTools = 4_096;

const echoTool: ToolSpec = {
  name: 'echo',
  description: 'Repeats the given text back.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
};

/**
 * The model as runs use it: for a self-hosted server first its base URL, the model it serves,
 * its context window against the agent's tool definitions and whether it streams; then, for every
 * provider, a real tool-call round trip (the model calls a tool, gets its result, answers), since
 * a server that answers text but cannot call tools fails every run.
 */
export async function checkModel({ config, log, signal }: DoctorDeps): Promise<DoctorRow> {
  const { scenarioPath, ...modelConfig } = config.model;
  if (modelConfig.provider === 'scripted') {
    return scenarioPath
      ? ok(`scripted model from ${scenarioPath}`)
      : bad(
          'no model is configured: sessions fail until one is',
          'set MODEL_PROVIDER and its API key, for example MODEL_PROVIDER=anthropic with ANTHROPIC_API_KEY',
        );
  }
  let model: ModelProvider;
  try {
    model = createModelProvider({ ...modelConfig, maxRetries: 0 }, { log });
  } catch (error) {
    return bad(describeError(error), 'set MODEL_PROVIDER and its API key (README, "Connect a model")');
  }
  const label = `${model.name}/${model.model}`;
  if (modelConfig.provider === 'openai-compatible' && modelConfig.baseUrl) {
    const server = await checkServer(modelConfig.baseUrl, model.model, modelConfig.apiKey, signal);
    if (server) return server;
  }
  const trip = await toolRoundTrip(model, signal);
  if (trip) return bad(`${label}: ${trip.detail}`, trip.fix);
  return ok(`${label} called a tool and answered with its result (context ${model.contextWindow} tokens)`);
}

/** A self-hosted server's own answers: base URL, model list, window and streaming. Undefined: all fine. */
async function checkServer(
  baseUrl: string,
  model: string,
  apiKey: string | undefined,
  signal: AbortSignal,
): Promise<DoctorRow | undefined> {
  const limits = await discoverServerLimits({ baseUrl, model, apiKey, signal });
  if (limits.models === undefined && !/\/v1\/?$/.test(new URL(baseUrl).pathname)) {
    const withV1 = `${baseUrl.replace(/\/+$/, '')}/v1`;
    const there = await discoverServerLimits({ baseUrl: withV1, model, apiKey, signal });
    if (there.models !== undefined)
      return bad(
        `OPENAI_BASE_URL ${baseUrl} has no /v1: the server answers at ${withV1}`,
        `set OPENAI_BASE_URL=${withV1}`,
      );
  }
  if (limits.modelListed === false)
    return bad(
      `the server at ${baseUrl} does not serve ${model}; it serves ${limits.models?.join(', ') || 'no model'}`,
      'set MODEL to one of the names the server lists (GET /v1/models)',
    );
  const tools = createToolRegistry(createDefaultTools()).specs();
  const needed = estimateRequestTokens({ system: '', messages: [], tools }) + roomBesideTools;
  if (limits.contextWindow !== undefined && limits.contextWindow < needed)
    return bad(
      `the context window is ${limits.contextWindow} tokens (${limits.source}); the agent's tools alone take about ${needed - roomBesideTools}, and a run needs at least ${needed}`,
      "start the server with a larger context (vLLM --max-model-len, llama.cpp --ctx-size, Ollama's num_ctx)",
    );
  if (!(await streams(baseUrl, model, apiKey, signal)))
    return bad(
      `the server at ${baseUrl} does not stream: it answered a streamed request without text/event-stream`,
      'use a server or gateway that supports "stream": true on /v1/chat/completions',
    );
  return undefined;
}

async function streams(baseUrl: string, model: string, apiKey: string | undefined, signal: AbortSignal) {
  try {
    const response = await fetch(`${baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey && { authorization: `Bearer ${apiKey}` }) },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'ping' }], max_tokens: 1, stream: true }),
      signal,
    });
    await response.body?.cancel();
    // A refusal is the round trip's to explain; only a 200 that is not a stream is this check's.
    return !response.ok || (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  } catch {
    return true;
  }
}

/** Undefined when the model called the tool and then answered with its result. */
async function toolRoundTrip(model: ModelProvider, signal: AbortSignal) {
  const system = 'You test tool calls. When asked, call the echo tool; after its result, reply with one word.';
  const ask = { role: 'user' as const, content: 'Call the echo tool with the text "pong".' };
  const first = await model.runTurn({ system, messages: [ask], tools: [echoTool], maxTokens: 200, signal });
  if (first.stopReason === 'error')
    return first.error?.code === 'model_error'
      ? {
          detail: `the server cannot do tool calls: ${first.error.message}`,
          fix: 'enable tool calling on the server (vLLM: --enable-auto-tool-choice --tool-call-parser …; llama.cpp: --jinja) or choose a model that supports tools',
        }
      : { detail: first.error?.message ?? 'the call failed', fix: modelFix(first.error?.code) };
  const call = first.toolCalls.find((c) => c.name === echoTool.name);
  if (!call)
    return {
      detail: `the model answered in text instead of calling a tool (${JSON.stringify((first.content ?? '').slice(0, 80))}): it cannot do tool calls here`,
      fix: 'choose a model that supports tool calling, or enable the tool-call parser of the server',
    };
  const second = await model.runTurn({
    system,
    messages: [
      ask,
      { role: 'assistant', toolCalls: [call] },
      { role: 'tool', toolCallId: call.id, name: call.name, content: 'pong', isError: false },
    ],
    tools: [echoTool],
    maxTokens: 200,
    signal,
  });
  if (second.stopReason === 'error')
    return {
      detail: `the server refused a tool result: ${second.error?.message ?? 'the call failed'}`,
      fix: 'use a chat template that accepts tool messages (llama.cpp: --jinja)',
    };
  return undefined;
}

function modelFix(code: string | undefined): string {
  switch (code) {
    case 'model_auth':
      return 'the key was refused: check the API key variable of MODEL_PROVIDER';
    case 'model_not_found':
      return 'check MODEL: the provider does not serve that model to this key';
    case 'model_unavailable':
      return "the provider cannot be reached: check this host's network and the provider's base URL setting";
    default:
      return 'check the provider settings (README, "Connect a model")';
  }
}
