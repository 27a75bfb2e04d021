import type { TurnError } from './model-provider.ts';
import { headerLookup, retryAfterMs } from './retry-after.ts';
import { readContextRefusal } from './model-limits.ts';

/**
 * Turns whatever an SDK threw into a coded error a thread can show. Both vendor SDKs are built by
 * the same generator, so their errors share a shape: `status` for HTTP failures, `error` for the
 * parsed body, and class names for abort and connection failures.
 */
export type ErrorContext = { vendor: string; model: string; baseUrl: string };

type SdkErrorLike = { status?: unknown; error?: unknown; message?: unknown; headers?: unknown };

export function isAbortError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === 'AbortError' || error.constructor.name === 'APIUserAbortError';
}

/**
 * The coded error, with what the response's headers add: the wait the server asked for, and its
 * `x-should-retry` verdict (both vendors send it), which overrides the status's default.
 */
export function toTurnError(error: unknown, ctx: ErrorContext, now = Date.now()): TurnError {
  const coded = codedError(error, ctx);
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorLike;
  const headers = headerLookup(e.headers);
  const shouldRetry = headers?.get('x-should-retry');
  const retryable = shouldRetry === 'true' ? true : shouldRetry === 'false' ? false : coded.retryable;
  const wait = retryable ? retryAfterMs(headers, now) : undefined;
  return { ...coded, retryable, ...(wait !== undefined && { retryAfterMs: wait }) };
}

/** A request that never got an answer, or lost it midway: not reached, timed out, dropped. */
function connectionError(error: unknown, ctx: ErrorContext): TurnError | undefined {
  const className = error instanceof Error ? error.constructor.name : '';
  if (className === 'APIConnectionTimeoutError') {
    return { code: 'timeout', message: `${ctx.vendor} did not answer in time at ${ctx.baseUrl}`, retryable: true };
  }
  if (className === 'APIConnectionError') {
    return {
      code: 'model_unavailable',
      message: `Could not reach ${ctx.vendor} at ${ctx.baseUrl}: ${causeMessage(error) ?? 'connection failed'}; check the base URL`,
      retryable: true,
    };
  }
  if (isDroppedConnection(error)) {
    return {
      code: 'model_unavailable',
      message: `The connection to ${ctx.vendor} at ${ctx.baseUrl} dropped mid-answer: ${causeMessage(error) ?? describe(error)}`,
      retryable: true,
    };
  }
  return undefined;
}

function codedError(error: unknown, ctx: ErrorContext): TurnError {
  const e = (typeof error === 'object' && error !== null ? error : {}) as SdkErrorLike;
  const detail = vendorMessage(e);
  const type = vendorErrorType(e);
  const connection = connectionError(error, ctx);
  if (connection) return connection;
  const status = typeof e.status === 'number' ? e.status : undefined;
  if (status === 408) {
    return { code: 'timeout', message: `${ctx.vendor} timed out the request (408)${suffix(detail)}`, retryable: true };
  }
  if (status === 409) {
    return {
      code: 'model_unavailable',
      message: `${ctx.vendor} had a conflict (409)${suffix(detail)}`,
      retryable: true,
    };
  }
  if (status === 401 || type === 'authentication_error') {
    return { code: 'model_auth', message: `${ctx.vendor} rejected the API key${suffix(detail)}`, retryable: false };
  }
  if (status === 403 || type === 'permission_error') {
    return {
      code: 'model_auth',
      message: `${ctx.vendor} refused access to model ${ctx.model}${suffix(detail)}`,
      retryable: false,
    };
  }
  if (status === 404 || type === 'not_found_error' || /model.*(not exist|not found)/i.test(detail ?? '')) {
    return {
      code: 'model_not_found',
      message: `model ${ctx.model} does not exist at ${ctx.vendor}${suffix(detail)}`,
      retryable: false,
    };
  }
  if (status === 429 || type === 'rate_limit_error') {
    return {
      code: 'model_rate_limited',
      message: `${ctx.vendor} rate limit reached${suffix(detail)}`,
      retryable: true,
    };
  }
  if (status === 529 || status === 503 || type === 'overloaded_error') {
    return {
      code: 'model_overloaded',
      message: `${ctx.vendor} is overloaded${suffix(detail)}`,
      retryable: true,
    };
  }
  if ((status !== undefined && status >= 500) || type === 'api_error' || type === 'server_error') {
    return {
      code: 'model_unavailable',
      message: `${ctx.vendor} had a server error${status ? ` (${status})` : ''}${suffix(detail)}`,
      retryable: true,
    };
  }
  const context = status === 400 ? readContextRefusal(detail ?? '', vendorErrorBody(e)) : undefined;
  if (context) {
    return {
      code: 'model_context_exceeded',
      message: `the conversation no longer fits the context window of ${ctx.model}${suffix(detail)}`,
      retryable: false,
      context,
    };
  }
  if (status !== undefined && status >= 400) {
    return {
      code: 'model_error',
      message: `${ctx.vendor} rejected the request (${status})${suffix(detail)}`,
      retryable: false,
    };
  }
  return { code: 'model_error', message: `${ctx.vendor} turn failed: ${detail ?? String(error)}`, retryable: false };
}

/**
 * A socket closed while the body was read (after the server accepted the request): undici throws a
 * bare TypeError ('terminated') that neither SDK wraps, with the socket's error as its cause.
 */
function isDroppedConnection(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  if (error.message === 'terminated') return true;
  const code = (error.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_BODY_TIMEOUT)$/.test(code);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function suffix(detail: string | undefined): string {
  return detail ? `: ${detail}` : '';
}

/** The vendor's own message from the error body, when there is one. */
function vendorMessage(e: SdkErrorLike): string | undefined {
  const body = e.error as { message?: unknown; error?: { message?: unknown } } | undefined;
  const nested = body?.error?.message ?? body?.message;
  if (typeof nested === 'string' && nested) return nested;
  return typeof e.message === 'string' && e.message ? e.message : undefined;
}

function vendorErrorBody(e: SdkErrorLike): Record<string, unknown> | undefined {
  const body = e.error as { error?: unknown } | undefined;
  const inner = typeof body?.error === 'object' && body.error !== null ? body.error : body;
  return typeof inner === 'object' && inner !== null ? (inner as Record<string, unknown>) : undefined;
}

function vendorErrorType(e: SdkErrorLike): string | undefined {
  const body = e.error as { type?: unknown; code?: unknown; error?: { type?: unknown; code?: unknown } } | undefined;
  // A Responses stream's `event: error` is itself the body: `{type: 'error', code: 'server_error', …}`.
  const own = body?.type === 'error' && body.error === undefined ? body.code : body?.type;
  const type = body?.error?.type ?? own ?? body?.error?.code;
  return typeof type === 'string' ? type : undefined;
}

function causeMessage(error: unknown): string | undefined {
  let cur: unknown = error instanceof Error ? error.cause : undefined;
  let last: string | undefined;
  for (let depth = 0; cur instanceof Error && depth < 4; depth++) {
    const code = (cur as { code?: unknown }).code;
    last = typeof code === 'string' ? `${code} (${cur.message})` : cur.message;
    cur = cur.cause;
  }
  return last;
}
