import type { Logger } from 'pino';
import type { TurnError, TurnRequest, TurnResult, Usage } from './model-provider.ts';
import { zeroUsage } from './model-provider.ts';
import { type CallTimeouts, defaultCallTimeouts, startCallTimer } from './call-timer.ts';
import { isAbortError, toTurnError, type ErrorContext } from './provider-errors.ts';
import { defaultRetryPolicy, type RetryPolicy } from './retry-policy.ts';
import { type RetryClock, retryTurn } from './retrying-turn.ts';
import { abortedTurn, createTurnAccumulator, errorTurn, type TurnAccumulator } from './turn-accumulator.ts';

/** How a provider's calls fail, retry and time out. */
export type StreamCall = {
  ctx: ErrorContext;
  log: Logger;
  retry?: RetryPolicy | undefined;
  timeouts?: CallTimeouts | undefined;
  clock?: RetryClock | undefined;
};

/** A provider's settings for its calls: MODEL_MAX_RETRIES, and the policy and timeouts when not the defaults. */
export type CallSettings = {
  /** At most this many retries per call (0: none); unset: as many as the call's deadline allows. */
  maxRetries?: number | undefined;
  retry?: RetryPolicy | undefined;
  timeouts?: CallTimeouts | undefined;
  clock?: RetryClock | undefined;
};

export function streamCall(ctx: ErrorContext, log: Logger, settings: CallSettings): StreamCall {
  const policy = settings.retry ?? defaultRetryPolicy;
  return {
    ctx,
    log,
    retry: settings.maxRetries === undefined ? policy : { ...policy, maxRetries: settings.maxRetries },
    timeouts: settings.timeouts,
    clock: settings.clock,
  };
}

/** What one attempt's `consume` gets: the signal to hand the SDK, and a beat to call per stream event. */
export type StreamScope = { signal: AbortSignal; alive(): void };

/**
 * The frame every streaming adapter shares, so each keeps only its vendor's event handling:
 * `consume` reads the stream into the accumulator and usage, then returns how to finish the turn.
 * Each attempt runs under an idle and a total timeout, and a transient failure is tried again
 * (retryTurn). Never throws: an abort ends as 'aborted', anything thrown becomes a coded error turn.
 */
export function streamTurn(
  request: TurnRequest,
  call: StreamCall,
  consume: (acc: TurnAccumulator, usage: Usage, scope: StreamScope) => Promise<() => TurnResult>,
): Promise<TurnResult> {
  const retry = { policy: call.retry ?? defaultRetryPolicy, log: call.log, clock: call.clock };
  return retryTurn(request, retry, () => streamAttempt(request, call, consume));
}

async function streamAttempt(
  request: TurnRequest,
  call: StreamCall,
  consume: (acc: TurnAccumulator, usage: Usage, scope: StreamScope) => Promise<() => TurnResult>,
): Promise<TurnResult> {
  if (request.signal.aborted) return abortedTurn(undefined);
  const acc = createTurnAccumulator(request.onDelta);
  const usage: Usage = { ...zeroUsage };
  const timeouts = call.timeouts ?? defaultCallTimeouts;
  const timer = startCallTimer(request.signal, timeouts);
  let finish: () => TurnResult;
  try {
    finish = await consume(acc, usage, timer);
  } catch (error) {
    if (request.signal.aborted) return abortedTurn(acc, usage);
    const expired = timer.expired();
    if (expired) return errorTurn(timeoutError(call.ctx, expired, timeouts), acc, usage);
    if (isAbortError(error)) return abortedTurn(acc, usage);
    const turnError = toTurnError(error, call.ctx);
    call.log.warn({ code: turnError.code, err: error }, 'model turn failed');
    return errorTurn(turnError, acc, usage);
  } finally {
    timer.stop();
  }
  if (request.signal.aborted) return abortedTurn(acc, usage);
  // An SDK stream aborted mid-iteration ends quietly instead of throwing: the timer says why it ended.
  const expired = timer.expired();
  if (expired) return errorTurn(timeoutError(call.ctx, expired, timeouts), acc, usage);
  return finish();
}

function timeoutError(ctx: ErrorContext, which: 'idle' | 'total', timeouts: CallTimeouts): TurnError {
  const message =
    which === 'idle'
      ? `${ctx.vendor} sent nothing for ${Math.round(timeouts.idleMs / 1000)} s at ${ctx.baseUrl}`
      : `${ctx.vendor} did not finish its answer within ${Math.round(timeouts.totalMs / 1000)} s at ${ctx.baseUrl}`;
  return { code: 'timeout', message, retryable: true };
}

/** A stream that ended without its closing event: what came is a cut answer, never a final one. */
export function streamCutError(ctx: ErrorContext, closing: string): TurnError {
  return {
    code: 'model_stream_cut',
    message: `${ctx.vendor}'s answer stopped before its end (no ${closing}); the turn can be retried`,
    retryable: true,
  };
}
