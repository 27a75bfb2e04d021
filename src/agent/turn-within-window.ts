import type { RunOutcome } from './agent-runner.ts';
import type { TurnResult } from '../models/model-provider.ts';
import { compactTranscript, takeModelTurn } from './model-turn.ts';
import type { RunState } from './run-state.ts';

/**
 * A model turn that the server may refuse as too long for its window (the estimate that decides
 * when to compact is rough, and a server's window can be smaller than believed): then the older
 * turns are compacted, whatever the estimate says, and the turn is tried once more. A second
 * refusal ends the run with the server's reason.
 */
export async function takeTurnWithinWindow(
  run: RunState,
  turn: number,
): Promise<{ result: TurnResult } | { outcome: RunOutcome }> {
  const taken = await takeModelTurn(run, turn);
  if (!('outcome' in taken) || taken.outcome.kind !== 'failed' || taken.outcome.code !== 'model_context_exceeded')
    return taken;
  run.input.log.warn(
    { reason: taken.outcome.message },
    'the prompt did not fit the window: compacting, then once more',
  );
  if (!(await compactTranscript(run, turn, { force: true }))) return { outcome: { kind: 'cancelled' } };
  return takeModelTurn(run, turn);
}
