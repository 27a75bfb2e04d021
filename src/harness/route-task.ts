import type { TaskClass } from '../core/verdict.ts';

export type Route = { taskClass: TaskClass; reason: string; costShare: number; timeShare: number; guidance?: string };

/**
 * Classifies a task by rules before the run (no model call, so it is free and repeatable). The
 * class sets the share of the run's budgets; an architecture-level or unclear request gets a plan or
 * a question back in the thread before any code changes, instead of a shrunken result.
 */
export function routeTask(text: string): Route {
  const t = text
    .toLowerCase()
    .replace(/<@[^>]+>|@\S+/g, ' ')
    .replace(/https?:\/\/\S+/g, ' ')
    .trim();
  const words = t.split(/\s+/).filter(Boolean);
  if (
    /\b(re-?architect|architecture|redesign|rewrite (the|it|everything|all)|migrate (from|to|the|all)|replace \w+ with|split (it|the \w+) into|new service|monorepo)\b/.test(
      t,
    )
  ) {
    return {
      taskClass: 'architecture',
      reason: 'asks for an architecture-level change',
      costShare: 1,
      timeShare: 1,
      guidance:
        'This is an architecture-level request. Before changing any code, read enough to propose a short plan (the steps, the files, the risks) and call ask_user with it and the choices "Go ahead" and "Change the plan". Change code only after the answer.',
    };
  }
  const vague =
    /^(fix|improve|clean ?up|refactor|update|make)( (it|this|things|stuff|everything|the code|code))?( (better|nicer|faster|up))?[.!]*$/.test(
      words.join(' '),
    );
  if (words.length < 3 || vague) {
    return {
      taskClass: 'unclear',
      reason: words.length < 3 ? 'the request is too short to act on' : 'the request does not say what should change',
      costShare: 0.25,
      timeShare: 0.25,
      guidance:
        'The request is unclear. Look at the repository briefly, then call ask_user with one specific question (what should change, where, how to tell it works), offering concrete choices when you can. Do not change code before the answer.',
    };
  }
  if (
    words.length > 60 ||
    /\b(across|everywhere|all (the )?(files|modules|packages|callers)|every \w+|several|multiple|rename \S+ to)\b/.test(
      t,
    )
  ) {
    return { taskClass: 'multi-file', reason: 'touches several files', costShare: 0.6, timeShare: 0.6 };
  }
  return { taskClass: 'small-fix', reason: 'a focused change', costShare: 0.3, timeShare: 0.5 };
}
