import type { SubtaskSpec } from '../core/subtasks.ts';
import type { ToolCall } from '../models/model-provider.ts';
import type { RunOutcome } from './agent-runner.ts';
import { recordCallResult, recordStep, type RunState } from './run-state.ts';

/**
 * How the runner starts a spawn_subtasks call's children and learns how they went. The harness
 * implements it over the session store; a sub-task's own run has none (depth 1).
 */
export type SubtaskSpawner = {
  /**
   * Creates the call's child sessions, at most once per call, with the call's subtasks-spawned
   * event. A refusal (a repository that cannot be worked on) is a message for the model.
   */
  spawn(call: ToolCall, tasks: SubtaskSpec[]): Promise<{ kind: 'spawned' } | { kind: 'refused'; message: string }>;
  /** The call's children: none yet, some still going, or all ended, with the call's result for the model. */
  standing(callId: string): Promise<{ kind: 'none' } | { kind: 'running' } | { kind: 'ended'; content: string }>;
};

const depthRefusal =
  'spawn_subtasks is not available here: this session is itself a sub-task, and sub-tasks cannot start sub-tasks of their own. Do the work in this session.';

/**
 * A spawn_subtasks call of this turn. True when its children were created and the run is to wait
 * for them; false when the call got an error result instead (bad input, too many tasks, a
 * repository refused, or this session is a sub-task).
 */
export async function spawnSubtasks(run: RunState, call: ToolCall): Promise<boolean> {
  const output = await run.input.tools.execute(call, run.ctx);
  const spawner = run.input.subtasks;
  if (output.control?.kind !== 'spawn') {
    await recordCallResult(run, call, output.content, output.isError ?? false);
    return false;
  }
  if (!spawner) {
    await recordCallResult(run, call, depthRefusal, true);
    return false;
  }
  await recordStep(run, {
    events: [
      {
        event: { type: 'tool-start', callId: call.id, name: call.name, input: call.input },
        dedupeKey: `tool-start:${call.id}`,
      },
    ],
  });
  const spawned = await spawner.spawn(call, output.control.tasks);
  if (spawned.kind === 'refused') {
    await recordCallResult(run, call, spawned.message, true);
    return false;
  }
  return true;
}

/**
 * A resumed run's spawn_subtasks call without a result: spawned now if a crash came before its
 * children were created, still waited on while some run, or answered with how every child went.
 */
export async function resumeSpawn(run: RunState, call: ToolCall): Promise<RunOutcome | undefined> {
  const spawner = run.input.subtasks;
  if (!spawner) {
    await recordCallResult(run, call, depthRefusal, true);
    return undefined;
  }
  const standing = await spawner.standing(call.id);
  switch (standing.kind) {
    case 'none':
      return (await spawnSubtasks(run, call)) ? { kind: 'subtasks', callId: call.id } : undefined;
    case 'running':
      return { kind: 'subtasks', callId: call.id };
    case 'ended':
      await recordCallResult(run, call, standing.content, false);
      return undefined;
    default: {
      const _never: never = standing;
      return _never;
    }
  }
}
