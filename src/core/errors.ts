/**
 * The few coded errors Patchbay raises. Callers check `code`, never the message text.
 * `retryable` says whether the same call may succeed later (rate limit, overload, network).
 */
export type ErrorCode =
  | 'config_invalid'
  | 'not_found'
  | 'invalid_input'
  | 'unauthorized'
  | 'conflict'
  | 'sandbox_unavailable'
  | 'sandbox_failed'
  | 'command_refused'
  | 'path_refused'
  | 'timeout'
  | 'aborted'
  | 'model_auth'
  | 'model_not_found'
  | 'model_rate_limited'
  | 'model_overloaded'
  | 'model_unavailable'
  | 'model_bad_response'
  /** A streamed answer that ended without its closing event: cut, never a final answer. */
  | 'model_stream_cut'
  /** The prompt and the reply do not fit the model's context window: compact, then try again. */
  | 'model_context_exceeded'
  | 'model_error'
  | 'git_failed'
  | 'budget_exhausted'
  | 'service_unavailable'
  /** A write of a run whose lease another run took over: the run stops. */
  | 'lease_lost'
  | 'internal';

export class PatchbayError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.name = 'PatchbayError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

export function isPatchbayError(error: unknown, code?: ErrorCode): error is PatchbayError {
  return error instanceof PatchbayError && (code === undefined || error.code === code);
}

/** A message safe to show in a thread: the error's own text, never a stack. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
