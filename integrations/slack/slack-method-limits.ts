import { ErrorCode, WebClient, type WebAPICallResult } from '@slack/web-api';

/** How often one call waits out a 429 before its error is the caller's. */
const maxWaits = 5;

/**
 * Slack's rate limits are per method (Tier 1 to 4), and chat.postMessage's per channel: a 429 on
 * one says nothing of the others. The key a call is limited under.
 */
export function limitKey(method: string, options: Record<string, unknown> = {}): string {
  return method === 'chat.postMessage' && typeof options.channel === 'string' ? `${method}:${options.channel}` : method;
}

/**
 * When each method (or method and channel) may be called again after Slack's Retry-After, and the
 * calls waiting for it. A free key's calls go at once, side by side. A key Slack answered 429 is
 * held for its Retry-After and its calls go in line, one at a time, each waiting out the hold: under
 * a one-a-minute method (conversations.replies for an app outside Slack's Marketplace) the calls
 * waiting would otherwise all go when the minute is up, and all but one be refused again. Other
 * keys never wait with it.
 */
export class MethodLimits {
  readonly #until = new Map<string, number>();
  /** Per held key, the last call in its line (settled when the line is through). */
  readonly #lines = new Map<string, Promise<unknown>>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Milliseconds until `key` may be called again (0: now). */
  waitFor(key: string): number {
    const until = this.#until.get(key);
    if (until === undefined) return 0;
    const left = until - this.#now();
    if (left <= 0) this.#until.delete(key);
    return Math.max(0, left);
  }

  /** Slack answered 429 for `key`: nothing under it goes out for `seconds`. */
  hold(key: string, seconds: number): void {
    this.#until.set(key, Math.max(this.#until.get(key) ?? 0, this.#now() + seconds * 1000));
  }

  /**
   * Makes `call` under `key`, waiting out Slack's 429s (at most `maxWaits` for this call, then the
   * rate-limited error is the caller's). Anything else it throws is thrown at once.
   */
  async run<T>(key: string, call: () => Promise<T>): Promise<T> {
    if (!this.#lines.has(key) && this.waitFor(key) === 0) {
      const first = await attempt(call);
      if (first.done) return first.value;
      this.hold(key, first.retryAfter);
    }
    return this.#inLine(key, call);
  }

  #inLine<T>(key: string, call: () => Promise<T>): Promise<T> {
    const ahead = this.#lines.get(key) ?? Promise.resolve();
    const mine = ahead.then(() => this.#waitThenCall(key, call));
    const through = mine.then(
      () => undefined,
      () => undefined,
    );
    this.#lines.set(key, through);
    void through.then(() => {
      if (this.#lines.get(key) === through) this.#lines.delete(key);
    });
    return mine;
  }

  async #waitThenCall<T>(key: string, call: () => Promise<T>): Promise<T> {
    for (let waits = 1; ; waits += 1) {
      await sleep(this.waitFor(key));
      const result = await attempt(call);
      if (result.done) return result.value;
      if (waits >= maxWaits) throw result.error;
      this.hold(key, result.retryAfter);
    }
  }
}

type Attempt<T> = { done: true; value: T } | { done: false; retryAfter: number; error: unknown };

/** One call: its answer, or the seconds a 429 asked to wait. */
async function attempt<T>(call: () => Promise<T>): Promise<Attempt<T>> {
  try {
    return { done: true, value: await call() };
  } catch (error) {
    const { code, retryAfter } = error as { code?: string; retryAfter?: number };
    if (code !== ErrorCode.RateLimitedError) throw error;
    return { done: false, retryAfter: retryAfter ?? 1, error };
  }
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

/**
 * A Web API client that waits out Slack's rate limits per method instead of pausing every call:
 * the SDK, told to reject rate-limited calls, hands a 429 back at once (its own handling pauses its
 * whole request queue), and the call waits its Retry-After under its method's key alone (`limits`,
 * which clients of one app share: Slack counts per app, not per client); calls of other methods
 * (and posts to other channels) go on meanwhile. Every SDK method goes through `apiCall`, so
 * `web.chat.update(...)` and the rest are covered.
 */
export class TieredWebClient extends WebClient {
  readonly limits: MethodLimits;

  constructor(
    token: string,
    options: ConstructorParameters<typeof WebClient>[1] = {},
    limits: MethodLimits = new MethodLimits(),
  ) {
    super(token, { ...options, rejectRateLimitedCalls: true });
    this.limits = limits;
  }

  override apiCall(method: string, options?: Record<string, unknown>): Promise<WebAPICallResult> {
    return this.limits.run(limitKey(method, options), () => super.apiCall(method, options));
  }
}
