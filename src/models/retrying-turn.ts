import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { RetryNotice, TurnRequest, TurnResult, Usage } from './model-provider.ts';
import { decideRetry, type RetryPolicy } from './retry-policy.ts';
import { abortedTurn } from './turn-accumulator.ts';

/** Time and chance for the retries, so a test can run them without waiting. */
export type RetryClock = {
  now(): number;
  random(): number;
  /** Rejects when the signal fires. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
};

export const systemRetryClock: RetryClock = {
  now: Date.now,
  random: Math.random,
  sleep: (ms, signal) => sleep(ms, undefined, { signal }),
};

export type RetryOptions = { policy: RetryPolicy; log: Logger; clock?: RetryClock | undefined };

/**
 * Runs `attempt` until it succeeds, fails for good, or the retry policy says stop (see
 * decideRetry): the error's `retryable` flag and `retryAfterMs` decide, within the call's deadline
 * and the run's remaining time. Each wait is announced through `request.onRetry` first. A failure
 * after retries says how many tries it took; tokens spent by failed attempts are counted in the
 * result. Never throws; an abort while waiting ends as 'aborted'.
 */
export async function retryTurn(
  request: TurnRequest,
  options: RetryOptions,
  attempt: () => Promise<TurnResult>,
): Promise<TurnResult> {
  const { policy, log } = options;
  const clock = options.clock ?? systemRetryClock;
  const started = clock.now();
  const failed: Usage[] = [];
  for (let retries = 0; ; retries++) {
    const raw = await attempt();
    const result = withUsage(raw, failed);
    const { error } = result;
    if (result.stopReason !== 'error' || !error) return result;
    const elapsedMs = clock.now() - started;
    const remainingMs = request.retryWithinMs === undefined ? undefined : request.retryWithinMs - elapsedMs;
    const decision = decideRetry({ policy, error, retries, elapsedMs, remainingMs, random: clock.random() });
    if (!decision.retry) {
      if (retries === 0) return result;
      const took = `${retries + 1} tries over ${Math.round(elapsedMs / 1000)} s`;
      log.warn({ code: error.code, tries: retries + 1, reason: decision.reason }, 'model call given up');
      return { ...result, error: { ...error, message: `${error.message} (gave up after ${took})` } };
    }
    failed.push(raw.usage);
    const notice: RetryNotice = { error, retry: retries + 1, delayMs: decision.delayMs };
    log.warn({ code: error.code, retry: notice.retry, delayMs: notice.delayMs }, 'model call failed; trying again');
    await announce(request, notice, log);
    try {
      await clock.sleep(decision.delayMs, request.signal);
    } catch {
      return abortedTurn(undefined, result.usage);
    }
    if (request.signal.aborted) return abortedTurn(undefined, result.usage);
  }
}

async function announce(request: TurnRequest, notice: RetryNotice, log: Logger): Promise<void> {
  try {
    await request.onRetry?.(notice);
  } catch (error) {
    log.warn({ err: error }, 'could not report a model retry');
  }
}

/** The result with the tokens of the failed attempts before it added. */
function withUsage(result: TurnResult, failed: readonly Usage[]): TurnResult {
  if (failed.length === 0) return result;
  const usage = { ...result.usage };
  for (const u of failed) {
    usage.inputTokens += u.inputTokens;
    usage.outputTokens += u.outputTokens;
    usage.cacheReadTokens += u.cacheReadTokens;
    usage.cacheWriteTokens += u.cacheWriteTokens;
  }
  return { ...result, usage };
}
