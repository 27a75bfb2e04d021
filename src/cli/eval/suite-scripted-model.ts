import { PatchbayError } from '../../core/errors.ts';
import type { ModelProvider, TurnRequest, TurnResult } from '../../models/model-provider.ts';
import { zeroUsage } from '../../models/model-provider.ts';
import { createScriptedProvider, createSequenceProvider } from '../../models/scripted-provider.ts';
import type { EvalTask } from './eval-suite.ts';

/** The scripted agent and verifier for a whole suite, one session after another in one Patchbay. */
export type SuiteScriptedModels = { model: ModelProvider; verifierModel: ModelProvider };

/**
 * Every task plays its own `scenario.json`. Both models find the task a call belongs to by its
 * request, which the first user message quotes (the agent's task, the verifier's evidence): a
 * function of the transcript, so no state says which task is running.
 */
export function suiteScriptedModels(tasks: readonly EvalTask[]): SuiteScriptedModels {
  const agents = new Map<string, ModelProvider>();
  const verifiers = new Map<string, ModelProvider>();
  for (const task of tasks) {
    if (!task.scenario)
      throw new PatchbayError(
        'invalid_input',
        `eval task ${task.name} has no scenario.json, which the scripted model needs (or run it with --model)`,
      );
    if (!task.scenario.verifier)
      throw new PatchbayError(
        'invalid_input',
        `eval task ${task.name}: scenario.json has no "verifier" replies, which the scripted verifier needs`,
      );
    agents.set(task.request, createScriptedProvider({ scenario: task.scenario.turns, model: 'scripted' }));
    verifiers.set(task.request, createSequenceProvider(task.scenario.verifier, 'scripted'));
  }
  return { model: routed(agents), verifierModel: routed(verifiers) };
}

function routed(byRequest: ReadonlyMap<string, ModelProvider>): ModelProvider {
  return {
    name: 'scripted',
    model: 'scripted',
    contextWindow: 200_000,
    runTurn(request: TurnRequest): Promise<TurnResult> {
      const first = request.messages.find((m) => m.role === 'user')?.content ?? '';
      const matches = [...byRequest.entries()].filter(([text]) => first.includes(text));
      // The longest request that the message quotes: one request may contain another.
      const match = matches.sort((a, b) => b[0].length - a[0].length)[0];
      if (!match) return Promise.resolve(unmatched());
      return match[1].runTurn(request);
    },
  };
}

function unmatched(): TurnResult {
  return {
    toolCalls: [],
    stopReason: 'error',
    usage: { ...zeroUsage },
    error: {
      code: 'model_error',
      message: 'the scripted eval model got a call that quotes no task request of the suite',
      retryable: false,
    },
  };
}
