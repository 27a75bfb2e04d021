import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ModelMessage, ModelProvider, ToolCall, TurnRequest, TurnResult } from './model-provider.ts';
import { zeroUsage } from './model-provider.ts';

/** One scripted model reply. */
export const ScriptedTurn = z.object({
  text: z.string().optional(),
  toolCalls: z.array(z.object({ id: z.string().optional(), name: z.string(), input: z.unknown() })).default([]),
  /** Milliseconds to wait before answering, to simulate a slow model. */
  delayMs: z.number().int().nonnegative().optional(),
});
export type ScriptedTurn = z.input<typeof ScriptedTurn>;

export const ScriptedScenario = z.object({
  turns: z.array(ScriptedTurn).min(1),
  /** Replies of the independent verifier, one per call in order (the last repeats). */
  verifier: z.array(ScriptedTurn).min(1).optional(),
});

/** A scripted model that serves `turns` one per call, in order, the last one repeating. */
export function createSequenceProvider(turns: readonly ScriptedTurn[], model = 'scripted-verifier'): ScriptedProvider {
  let next = 0;
  return createScriptedProvider({ model, scenario: () => turns[Math.min(next++, turns.length - 1)]! });
}

/**
 * A scenario is either a list of turns, served in order by counting the assistant messages already
 * in the transcript (so a resumed session continues where it stopped), or a function of the transcript.
 */
export type Scenario = readonly ScriptedTurn[] | ((messages: readonly ModelMessage[]) => ScriptedTurn);

export type ScriptedProviderOptions = { scenario: Scenario; model?: string | undefined; contextWindow?: number };

export type ScriptedProvider = ModelProvider & { readonly requests: TurnRequest[] };

/** Replays a scenario. For tests and the demo; it calls no network. */
export function createScriptedProvider(options: ScriptedProviderOptions): ScriptedProvider {
  const requests: TurnRequest[] = [];
  return {
    name: 'scripted',
    model: options.model ?? 'scripted',
    contextWindow: options.contextWindow ?? 200_000,
    requests,
    async runTurn(request) {
      requests.push(request);
      if (request.signal.aborted) return aborted();
      const turn = pickTurn(options.scenario, request.messages);
      if (!turn) return { toolCalls: [], stopReason: 'end_turn', usage: { ...zeroUsage }, content: '' };
      const parsed = ScriptedTurn.parse(turn);
      if (parsed.delayMs) {
        const finished = await sleep(parsed.delayMs, request.signal);
        if (!finished) return aborted();
      }
      // Unique like a real provider's: after compaction the transcript no longer counts turns.
      const toolCalls: ToolCall[] = parsed.toolCalls.map((call) => ({
        id: call.id ?? `call_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
        name: call.name,
        input: call.input ?? {},
      }));
      if (parsed.text) request.onDelta?.(parsed.text);
      return {
        content: parsed.text,
        toolCalls,
        stopReason: toolCalls.length > 0 ? 'tool_use' : 'end_turn',
        usage: {
          ...zeroUsage,
          inputTokens: estimateTokens(request),
          outputTokens: Math.ceil((parsed.text ?? '').length / 4),
        },
      };
    },
  };
}

function pickTurn(scenario: Scenario, messages: readonly ModelMessage[]): ScriptedTurn | undefined {
  if (typeof scenario === 'function') return scenario(messages);
  return scenario[messages.filter((m) => m.role === 'assistant').length];
}

function aborted(): TurnResult {
  return { toolCalls: [], stopReason: 'aborted', usage: { ...zeroUsage } };
}

function estimateTokens(request: TurnRequest): number {
  return Math.ceil((request.system.length + JSON.stringify(request.messages).length) / 4);
}

function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
