import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Actor } from '../../core/actor.ts';
import type { Config } from '../../config.ts';
import { startPatchbay } from '../../main.ts';
import { createModelProvider } from '../../models/create-model-provider.ts';
import type { ModelProvider } from '../../models/model-provider.ts';
import { modelTotals } from './eval-outcome.ts';
import { loadSuite, type EvalTask } from './eval-suite.ts';
import { renderEvalTables, type ModelRun } from './eval-table.ts';
import { runEvalTask } from './run-eval-task.ts';
import { suiteScriptedModels } from './suite-scripted-model.ts';

/** A model to evaluate: its label in the table and the configuration that selects it. */
export type EvalModel = { label: string; config: Config };

export type RunEvalOptions = {
  models: readonly EvalModel[];
  /** `--verifier`: the one model that judges every model's work; without it each model judges its own. */
  verifier?: EvalModel | undefined;
  suiteDir: string;
  /** Where the JSON report goes, if anywhere. */
  jsonPath?: string;
  actor: Actor;
  log: Logger;
  out: NodeJS.WritableStream;
  signal?: AbortSignal;
};

/**
 * `patchbay eval`: the suite's tasks one after another through the real harness, once per model,
 * each model in a Patchbay of its own (its database under DATA_DIR/eval unless DATABASE_URL is set);
 * then a table per model and, with `jsonPath`, the JSON report. Exit code 0 when every task ran
 * (whatever its outcome); the figures are the result.
 */
export async function runEval(options: RunEvalOptions): Promise<number> {
  const tasks = await loadSuite(options.suiteDir);
  // The scripted model's scenarios are checked before any database starts.
  const scripted = options.models.map((m) => (isSuiteScripted(m.config) ? suiteScriptedModels(tasks) : undefined));
  const verifier = options.verifier && verifierModel(options.verifier, tasks, options.log);
  const runs: ModelRun[] = [];
  for (const [index, model] of options.models.entries()) {
    // Without --verifier a model judges its own work: its "verified" and "ready" are a self-grade.
    const judge = options.verifier?.label ?? model.label;
    const selfGraded = judge === model.label;
    const by = selfGraded ? 'itself (a self-grade: "verified" and "ready" are its own opinion of its work)' : judge;
    options.out.write(`Evaluating ${model.label} on ${tasks.length} tasks from ${options.suiteDir}, judged by ${by}\n`);
    const models = { ...scripted[index], ...(verifier && { verifierModel: verifier }) };
    const outcomes = await runModel(model, tasks, models, options);
    runs.push({ model: model.label, verifier: judge, selfGraded, outcomes });
    if (options.signal?.aborted) break;
  }
  options.out.write(`\n${renderEvalTables(runs)}`);
  if (options.jsonPath) {
    await writeFile(options.jsonPath, `${JSON.stringify(evalReport(options.suiteDir, runs), null, 2)}\n`);
    options.out.write(`\nWrote ${options.jsonPath}\n`);
  }
  return options.signal?.aborted ? 130 : 0;
}

/** The `--verifier` model: the suite's scripted verdicts for `scripted`, else the configured provider. */
function verifierModel(verifier: EvalModel, tasks: readonly EvalTask[], log: Logger): ModelProvider {
  if (verifier.config.model.provider === 'scripted') return suiteScriptedModels(tasks).verifierModel;
  const { scenarioPath: _scenario, ...modelConfig } = verifier.config.model;
  return createModelProvider(modelConfig, { log });
}

/** The scripted provider with no scenario file of its own plays each task's `scenario.json`. */
function isSuiteScripted(config: Config): boolean {
  return config.model.provider === 'scripted' && !config.model.scenarioPath;
}

async function runModel(
  model: EvalModel,
  tasks: readonly EvalTask[],
  models: { model?: ModelProvider; verifierModel?: ModelProvider },
  options: RunEvalOptions,
): Promise<ModelRun['outcomes']> {
  const config: Config = { ...model.config, dataDir: join(model.config.dataDir, 'eval') };
  await mkdir(config.dataDir, { recursive: true });
  const root = await mkdtemp(join(tmpdir(), 'patchbay-eval-'));
  const app = await startPatchbay(config, { log: options.log, work: true, ...models });
  try {
    const outcomes = [];
    for (const task of tasks) {
      if (options.signal?.aborted) break;
      const outcome = await runEvalTask({
        app,
        task,
        root,
        actor: options.actor,
        ...(options.signal && { signal: options.signal }),
      });
      options.out.write(
        `  ${task.name}: ${outcome.status}, hidden tests ${outcome.hidden.outcome}${outcome.readyWithHiddenFailing ? ' (made ready with a hidden test failing)' : ''}\n`,
      );
      outcomes.push(outcome);
    }
    return outcomes;
  } finally {
    await app.close();
    await rm(root, { recursive: true, force: true });
  }
}

/** The `--json` report: per model its totals and every task's figures, with the hidden tests' output. */
function evalReport(suiteDir: string, runs: readonly ModelRun[]) {
  return {
    suite: suiteDir,
    models: runs.map((run) => ({
      model: run.model,
      verifier: run.verifier,
      selfGraded: run.selfGraded,
      totals: modelTotals(run.outcomes),
      tasks: run.outcomes,
    })),
  };
}
