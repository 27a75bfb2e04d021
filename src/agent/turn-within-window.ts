import type { RunOutcome } from './agent-runner.ts';
import type { TurnError, TurnResult } from '../models/model-provider.ts';
import { compactTranscript, takeModelTurn } from './model-turn.ts';
import type { RunState } from './run-state.ts';
import { dropRefusedImage, fitTranscriptImages } from './transcript-images.ts';

type Taken = { result: TurnResult } | { outcome: RunOutcome; error?: TurnError };

/**
 * A model turn that the server may refuse as too long for its window (the estimate that decides
 * when to compact is rough, and a server's window can be smaller than believed): then the older
 * turns are compacted, whatever the estimate says, and the turn is tried once more. A second
 * refusal ends the run with the server's reason. The transcript's pictures are first fitted to
 * what one request may carry; a picture the API still refuses is dropped and the turn tried once more.
 */
export async function takeTurnWithinWindow(
  run: RunState,
  turn: number,
): Promise<{ result: TurnResult } | { outcome: RunOutcome }> {
  await fitTranscriptImages(run);
  const taken = await takeTurnWithoutRefusedImage(run, turn);
  if (!('outcome' in taken) || taken.outcome.kind !== 'failed' || taken.outcome.code !== 'model_context_exceeded')
    return taken;
  run.input.log.warn(
    { reason: taken.outcome.message },
    'the prompt did not fit the window: compacting, then once more',
  );
  if (!(await compactTranscript(run, turn, { force: true }))) return { outcome: { kind: 'cancelled' } };
  return takeModelTurn(run, turn);
}

/** A turn the API refused for one picture: the picture is dropped from the transcript, and the turn tried once more. */
async function takeTurnWithoutRefusedImage(run: RunState, turn: number): Promise<Taken> {
  const taken = await takeModelTurn(run, turn);
  const refusedImage = 'error' in taken ? taken.error?.refusedImage : undefined;
  if (!('error' in taken) || !taken.error || refusedImage === undefined) return taken;
  run.input.log.warn({ reason: taken.error.message }, 'the model API refused a picture: dropping it, then once more');
  await dropRefusedImage(run, { ...taken.error, refusedImage });
  return takeModelTurn(run, turn);
}
