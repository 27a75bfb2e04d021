import { z } from 'zod';
import { SubtaskSpec } from '../core/subtasks.ts';
import type { Tool } from './tool.ts';

/** The input of one call: the sub-tasks, at most `max` of them. */
function spawnInput(max: number) {
  return z.object({
    tasks: z
      .array(SubtaskSpec)
      .min(1)
      .max(max, `at most ${max} sub-tasks per call (SUBTASKS_MAX); group the work into fewer, larger sub-tasks`)
      .describe(
        'The sub-tasks. Each gets its own sandbox, checkout and branch, and runs at the same time as the others.',
      ),
  });
}
type SpawnInput = z.infer<ReturnType<typeof spawnInput>>;

/**
 * Splits the session's work into sub-tasks: each becomes a child session with its own
 * sandbox, branch and run. The tool only hands the tasks to the runner, which creates the
 * children and lets the run wait; when every child has ended, the call's result says how each went.
 */
export function createSpawnSubtasksTool(options: { max: number }): Tool<SpawnInput> {
  return {
    name: 'spawn_subtasks',
    description:
      'Split the work into independent sub-tasks that run in parallel, each in its own sandbox and branch ' +
      '(named after yours). Give each a short title and a self-contained prompt (the sub-task sees nothing else), ' +
      'and `repo` (a repository URL) for a sub-task on another repository; without it the sub-task works on this one. ' +
      'Your run pauses until every sub-task has ended; the result lists, per sub-task: status, branch, commit, ' +
      'changed files, check results and its final message or error. Sub-tasks cannot start sub-tasks of their own.',
    inputSchema: spawnInput(options.max),
    async execute(input) {
      return {
        content: `Starting ${input.tasks.length} sub-tasks; waiting for them to end.`,
        control: { kind: 'spawn', tasks: input.tasks },
      };
    },
  };
}
