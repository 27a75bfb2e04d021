import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { PatchbayError } from '../core/errors.ts';
import { createModelProvider } from '../models/create-model-provider.ts';
import type { ModelProvider } from '../models/model-provider.ts';
import { createSequenceProvider, ScriptedScenario } from '../models/scripted-provider.ts';
import { createUnconfiguredProvider } from '../models/unconfigured-provider.ts';

/** The model runs talk to, and the independent verifier's. */
export type Models = { model: ModelProvider; verifier: ModelProvider };

/**
 * The models of this process: the given one (tests, the demo) or the configured one; the verifier
 * is the given one, else a scripted scenario's `verifier`, else VERIFIER_MODEL, else the main model.
 */
export async function startModels(
  config: Config,
  given: { model?: ModelProvider | undefined; verifierModel?: ModelProvider | undefined },
  log: Logger,
): Promise<Models> {
  const built = given.model ? { model: given.model } : await buildModel(config, log);
  const verifier =
    given.verifierModel ??
    built.verifier ??
    (config.gates.verifierModel && !given.model
      ? createModelProvider({ ...config.model, model: config.gates.verifierModel }, { log })
      : built.model);
  return { model: built.model, verifier };
}

async function buildModel(config: Config, log: Logger): Promise<{ model: ModelProvider; verifier?: ModelProvider }> {
  const { scenarioPath, ...modelConfig } = config.model;
  if (modelConfig.provider === 'scripted' && scenarioPath) {
    const scenario = await readScenario(scenarioPath);
    return {
      model: createModelProvider({ ...modelConfig, scenario: scenario.turns }, { log }),
      ...(scenario.verifier && { verifier: createSequenceProvider(scenario.verifier) }),
    };
  }
  // The scripted model with no scenario is what an unset MODEL_PROVIDER means: no model at all.
  if (modelConfig.provider === 'scripted') {
    log.warn(
      'MODEL_PROVIDER is not set: sessions fail with "no model is configured" until it is set with its API key (see the README, "Connect a model")',
    );
    return { model: createUnconfiguredProvider() };
  }
  return { model: createModelProvider(modelConfig, { log }) };
}

/** SCRIPTED_SCENARIO: the file's turns (and the verifier's), or one line saying why it cannot be used. */
async function readScenario(path: string): Promise<ReturnType<typeof ScriptedScenario.parse>> {
  try {
    return ScriptedScenario.parse(JSON.parse(await readFile(path, 'utf8')));
  } catch (error) {
    throw new PatchbayError(
      'config_invalid',
      `SCRIPTED_SCENARIO ${path} is not a readable scenario file: ${(error as Error).message}`,
    );
  }
}
