import type { CliEngineName, RelayApi } from './engine.ts';

/** One API call the relay forwards: its method and its path (without the query). */
type AllowedCall = { method: 'POST' | 'GET'; path: string };

const messages: AllowedCall = { method: 'POST', path: '/v1/messages' };
const responses: AllowedCall = { method: 'POST', path: '/v1/responses' };

/**
 * The calls each engine's CLI makes to its model API, by the wire its traffic speaks, read from the
 * pinned CLIs (their requests against the loopback fakes, and the routes their binaries name):
 * Claude Code posts Messages, and counts tokens before it hands the model a large tool result;
 * Codex posts Responses, and `responses/compact` when it compacts a long thread remotely; OpenCode
 * posts to its provider's one route. None of them needs a GET (no model list: their model is set).
 */
function allowedCalls(engine: CliEngineName, api: RelayApi): readonly AllowedCall[] {
  switch (engine) {
    case 'claude-code':
      return [messages, { method: 'POST', path: '/v1/messages/count_tokens' }];
    case 'codex':
      return [responses, { method: 'POST', path: '/v1/responses/compact' }];
    case 'opencode':
      return api === 'anthropic' ? [messages] : [responses];
    default: {
      const _never: never = engine;
      return _never;
    }
  }
}

/**
 * Why the relay refuses to forward `method path` for this engine (a sentence for the engine and the
 * log), or undefined when the engine's wire needs it. Everything else the operator's credential could
 * reach (files, batches, fine-tuning, admin keys) stays out of the sandbox's reach. Pure.
 */
export function pathRefusal(engine: CliEngineName, api: RelayApi, method: string, path: string): string | undefined {
  const calls = allowedCalls(engine, api);
  if (calls.some((c) => c.method === method && c.path === path)) return undefined;
  const allowed = calls.map((c) => `${c.method} ${c.path}`).join(', ');
  return `Patchbay relay does not forward ${method} ${path.slice(0, 200)} for ${engine}; it forwards ${allowed} only`;
}
