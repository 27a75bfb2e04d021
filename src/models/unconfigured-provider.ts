import type { ModelProvider, TurnResult } from './model-provider.ts';
import { zeroUsage } from './model-provider.ts';

/** What a session's thread is told when the server has no model. */
export const noModelMessage =
  'No model is configured on this Patchbay server: set MODEL_PROVIDER and its API key (for example MODEL_PROVIDER=anthropic with ANTHROPIC_API_KEY) and restart it';

/**
 * The model of a server started without MODEL_PROVIDER. Every turn fails with a configuration
 * error, so a session ends failed with the reason in its thread instead of "completed" with no
 * changes (which is what a model that only says so would look like).
 */
export function createUnconfiguredProvider(): ModelProvider {
  return {
    name: 'none',
    model: 'none',
    contextWindow: 200_000,
    async runTurn(): Promise<TurnResult> {
      return {
        toolCalls: [],
        stopReason: 'error',
        usage: { ...zeroUsage },
        error: { code: 'config_invalid', message: noModelMessage, retryable: false },
      };
    },
  };
}
