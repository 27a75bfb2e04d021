import type { Logger } from 'pino';
import type { TurnRequest, TurnResult, Usage } from './model-provider.ts';
import { zeroUsage } from './model-provider.ts';
import { isAbortError, toTurnError, type ErrorContext } from './provider-errors.ts';
import { abortedTurn, createTurnAccumulator, errorTurn, type TurnAccumulator } from './turn-accumulator.ts';

/**
 * The frame every streaming adapter shares, so each keeps only its vendor's event handling:
 * `consume` reads the stream into the accumulator and usage, then returns how to finish the turn.
 * Never throws: an abort ends as 'aborted', anything thrown becomes a coded error turn.
 */
export async function streamTurn(
  request: TurnRequest,
  failure: { ctx: ErrorContext; log: Logger },
  consume: (acc: TurnAccumulator, usage: Usage) => Promise<() => TurnResult>,
): Promise<TurnResult> {
  if (request.signal.aborted) return abortedTurn(undefined);
  const acc = createTurnAccumulator(request.onDelta);
  const usage: Usage = { ...zeroUsage };
  let finish: () => TurnResult;
  try {
    finish = await consume(acc, usage);
  } catch (error) {
    if (request.signal.aborted || isAbortError(error)) return abortedTurn(acc, usage);
    const turnError = toTurnError(error, failure.ctx);
    failure.log.warn({ code: turnError.code, err: error }, 'model turn failed');
    return errorTurn(turnError, acc, usage);
  }
  if (request.signal.aborted) return abortedTurn(acc, usage);
  return finish();
}
