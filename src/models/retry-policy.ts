import type { TurnError } from './model-provider.ts';

/**
 * When a failed model call is tried again. One policy for every vendor: the SDKs' own retries are
 * off (maxRetries 0 in each client) because they give up after two tries in about a second, cannot
 * see an error that arrives mid-stream or a stream cut short, and know nothing of the run's budget.
 */
export type RetryPolicy = {
  /** The first wait when the server names none; each later one doubles, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** How long one call may keep trying, from its first attempt (the per-call deadline). */
  deadlineMs: number;
  /** At most this many retries (MODEL_MAX_RETRIES); unset: as many as the deadline allows. */
  maxRetries?: number | undefined;
};

export const defaultRetryPolicy: RetryPolicy = { baseDelayMs: 2_000, maxDelayMs: 60_000, deadlineMs: 15 * 60_000 };

/** Faults of the service, not of the model's answer: they pass, so a run waits them out (or pauses). */
const serviceFaults = new Set([
  'model_overloaded',
  'model_rate_limited',
  'model_unavailable',
  'model_stream_cut',
  'timeout',
]);

export function isServiceFault(error: TurnError): boolean {
  return error.retryable && serviceFaults.has(error.code);
}

/** A malformed answer is tried again a few times, not for the whole deadline: each try is paid for. */
const maxAnswerRetries = 2;

export type RetryDecision =
  | { retry: true; delayMs: number }
  | { retry: false; reason: 'not-retryable' | 'max-retries' | 'deadline' };

export type RetryInput = {
  policy: RetryPolicy;
  error: TurnError;
  /** Retries made so far in this call. */
  retries: number;
  /** Since the call's first attempt started. */
  elapsedMs: number;
  /** What is left of the run's time budget, when the caller has one. */
  remainingMs?: number | undefined;
  /** A number in [0, 1): the jitter. */
  random: number;
};

/**
 * Whether to try again and after how long. A wait the server named (Retry-After, a spent
 * rate-limit window) is honoured, with up to a tenth more so clients told the same thing do not
 * come back together; otherwise the wait doubles each retry, half of it random. Never past the
 * call's deadline or the run's budget: a wait that would end beyond either is not started.
 */
export function decideRetry(input: RetryInput): RetryDecision {
  const { policy, error, retries } = input;
  if (!error.retryable) return { retry: false, reason: 'not-retryable' };
  const cap = isServiceFault(error)
    ? policy.maxRetries
    : Math.min(policy.maxRetries ?? maxAnswerRetries, maxAnswerRetries);
  if (cap !== undefined && retries >= cap) return { retry: false, reason: 'max-retries' };
  const delayMs = retryDelayMs(policy, error.retryAfterMs, retries, input.random);
  const leftMs = Math.min(policy.deadlineMs - input.elapsedMs, input.remainingMs ?? Number.POSITIVE_INFINITY);
  if (delayMs > leftMs) return { retry: false, reason: 'deadline' };
  return { retry: true, delayMs };
}

export function retryDelayMs(
  policy: RetryPolicy,
  serverMs: number | undefined,
  retries: number,
  random: number,
): number {
  if (serverMs !== undefined) return Math.round(serverMs + random * Math.min(serverMs / 10, 1_000));
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retries);
  return Math.round(backoff / 2 + (random * backoff) / 2);
}
