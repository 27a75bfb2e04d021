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

/** When each method (or method and channel) may be called again after Slack's Retry-After. */
export class MethodLimits {
  readonly #until = new Map<string, number>();
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
}

/**
 * A Web API client that waits out Slack's rate limits per method instead of pausing every call:
 * the SDK, told to reject rate-limited calls, hands a 429 back at once (its own handling pauses its
 * whole request queue), and the call waits its Retry-After under its method's key alone; calls of
 * other methods (and posts to other channels) go on meanwhile. Every SDK method goes through
 * `apiCall`, so `web.chat.update(...)` and the rest are covered.
 */
export class TieredWebClient extends WebClient {
  readonly limits = new MethodLimits();

  constructor(token: string, options: ConstructorParameters<typeof WebClient>[1] = {}) {
    super(token, { ...options, rejectRateLimitedCalls: true });
  }

  override async apiCall(method: string, options?: Record<string, unknown>): Promise<WebAPICallResult> {
    const key = limitKey(method, options);
    for (let waits = 0; ; waits += 1) {
      const wait = this.limits.waitFor(key);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      try {
        return await super.apiCall(method, options);
      } catch (error) {
        const { code, retryAfter } = error as { code?: string; retryAfter?: number };
        if (code !== ErrorCode.RateLimitedError || waits >= maxWaits) throw error;
        this.limits.hold(key, retryAfter ?? 1);
      }
    }
  }
}
