import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { PatchbayError } from '../../core/errors.ts';
import { ScriptedScenario } from '../../models/scripted-provider.ts';

/** The kinds of work a suite mixes; `needs-question` is a task the agent cannot finish without asking. */
export const EvalTaskClass = z.enum(['bug-fix', 'feature', 'refactor', 'docs', 'needs-question']);
export type EvalTaskClass = z.infer<typeof EvalTaskClass>;

/** `task.json`: what is asked, and the hidden test command the agent never sees. */
const TaskFile = z.strictObject({
  request: z.string().trim().min(1),
  class: EvalTaskClass,
  /** Run with `sh -c` in a clean checkout of the pushed commit with `hidden/` copied over it; exit 0 passes. */
  hiddenTest: z.string().trim().min(1),
  /** The reply to the agent's question, if it asks one (else it is told to use its judgement). */
  answer: z.string().trim().min(1).optional(),
});

export type EvalTask = z.infer<typeof TaskFile> & {
  name: string;
  /** Host path of the task's directory (`repo/`, `hidden/`, `task.json`, `scenario.json`). */
  dir: string;
  /** The scripted model's play for this task (`scenario.json`), when the task ships one. */
  scenario?: z.infer<typeof ScriptedScenario>;
};

const TASK_NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * Every task directory under `dir`, sorted by name. A malformed task is refused with its path and
 * what is wrong, before anything runs; so are two tasks with the same request (the scripted model
 * tells tasks apart by their request).
 */
export async function loadSuite(dir: string): Promise<EvalTask[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((cause: unknown) => {
    throw new PatchbayError('invalid_input', `cannot read the eval suite ${dir}: ${(cause as Error).message}`, {
      cause,
    });
  });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const tasks: EvalTask[] = [];
  for (const name of names) tasks.push(await loadTask(join(dir, name), name));
  if (tasks.length === 0)
    throw new PatchbayError(
      'invalid_input',
      `the eval suite ${dir} has no task directories (each needs task.json, repo/ and hidden/)`,
    );
  const seen = new Map<string, string>();
  for (const task of tasks) {
    const other = seen.get(task.request);
    if (other)
      throw new PatchbayError(
        'invalid_input',
        `eval tasks ${other} and ${task.name} have the same request; each task needs its own`,
      );
    seen.set(task.request, task.name);
  }
  return tasks;
}

async function loadTask(dir: string, name: string): Promise<EvalTask> {
  const invalid = (what: string) => new PatchbayError('invalid_input', `eval task ${dir}: ${what}`);
  if (!TASK_NAME.test(name)) throw invalid('its directory name must be lowercase letters, digits and dashes');
  for (const sub of ['repo', 'hidden']) {
    const info = await stat(join(dir, sub)).catch(() => undefined);
    if (!info?.isDirectory()) throw invalid(`it has no ${sub}/ directory`);
  }
  const task = TaskFile.safeParse(await readJson(join(dir, 'task.json'), invalid));
  if (!task.success) throw invalid(`task.json: ${describeIssues(task.error)}`);
  const scenarioText = await readFile(join(dir, 'scenario.json'), 'utf8').catch(() => undefined);
  if (scenarioText === undefined) return { ...task.data, name, dir };
  const scenario = ScriptedScenario.safeParse(parseJson(scenarioText, 'scenario.json', invalid));
  if (!scenario.success) throw invalid(`scenario.json: ${describeIssues(scenario.error)}`);
  return { ...task.data, name, dir, scenario: scenario.data };
}

async function readJson(path: string, invalid: (what: string) => Error): Promise<unknown> {
  const text = await readFile(path, 'utf8').catch(() => {
    throw invalid('it has no readable task.json');
  });
  return parseJson(text, 'task.json', invalid);
}

function parseJson(text: string, file: string, invalid: (what: string) => Error): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalid(`${file} is not JSON (${(error as Error).message})`);
  }
}

function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ');
}
