/**
 * Slack's Web API rate limits as its docs state them (api.slack.com/docs/rate-limits): per method,
 * per workspace, per app, in tiers of requests per minute (Tier 1: 1+, Tier 2: 20+, Tier 3: 50+,
 * Tier 4: 100+), and chat.postMessage's special rule of about one message per second per channel
 * ("short bursts >1 allowed"). The fake holds each method to its tier's floor over a sliding
 * minute, and posts to 5 in any 5 s per channel (the burst it allows is its own choice: Slack does
 * not say how long a burst may be). Methods whose tier Slack does not state plainly are not limited.
 */
export const METHOD_TIERS: Readonly<Record<string, 1 | 2 | 3 | 4>> = {
  'apps.connections.open': 1,
  'chat.update': 3,
  'chat.postEphemeral': 4,
  'conversations.replies': 3,
  'reactions.add': 3,
  'users.info': 4,
  'files.getUploadURLExternal': 4,
  'files.completeUploadExternal': 4,
};

const perMinute = { 1: 1, 2: 20, 3: 50, 4: 100 } as const;
const postWindowMs = 5_000;
const postsPerWindow = 5;

export type SlackTiers = {
  /** Seconds to wait (Retry-After) when this call is over its limit; 0 when it may go (it is then counted). */
  check(method: string, channel?: string): number;
};

export function createSlackTiers(now: () => number = Date.now): SlackTiers {
  const calls = new Map<string, number[]>();
  return {
    check(method, channel) {
      const tier = METHOD_TIERS[method];
      const rule =
        method === 'chat.postMessage' && channel
          ? { key: `${method}:${channel}`, windowMs: postWindowMs, allowed: postsPerWindow }
          : tier
            ? { key: method, windowMs: 60_000, allowed: perMinute[tier] }
            : undefined;
      if (!rule) return 0;
      const at = now();
      const recent = (calls.get(rule.key) ?? []).filter((t) => t > at - rule.windowMs);
      if (recent.length >= rule.allowed) {
        calls.set(rule.key, recent);
        return Math.max(1, Math.ceil((recent[0]! + rule.windowMs - at) / 1000));
      }
      recent.push(at);
      calls.set(rule.key, recent);
      return 0;
    },
  };
}

/**
 * Slack's rule for apps outside its Marketplace, for the two methods that read messages. From the
 * conversations.replies reference (docs.slack.dev/reference/methods/conversations.replies): "As of
 * May 29, 2025, for new applications and installation commercially distributed outside of the
 * Marketplace, this method is rate limited to 1 request per minute. The maximum and default values
 * for the limit parameter have both been reduced to 15 objects. For Marketplace and internal
 * customer-built applications, this method has Tier 3 rate limits." conversations.history says the
 * same (changelog 2025-05-29, "Rate limit changes for non-Marketplace apps"). The limits are
 * "per API method per workspace/team per app": one workspace here, so per method.
 */
export const READ_METHODS: readonly string[] = ['conversations.history', 'conversations.replies'];

/**
 * Objects per page: `limit` is "the maximum number of items to return", so a larger one is not
 * refused but cut to the method's maximum (the page ends with has_more and a next_cursor, as
 * apps outside the Marketplace see it: 15 where 200 were asked). Marketplace values from the
 * methods' references: conversations.replies 1000 (its default too), conversations.history 999
 * (default 100).
 */
export function pageSize(method: string, asked: number | undefined, marketplace: boolean) {
  const rule = marketplace
    ? method === 'conversations.history'
      ? { max: 999, byDefault: 100 }
      : { max: 1000, byDefault: 1000 }
    : { max: 15, byDefault: 15 };
  const given = Math.min(asked ?? rule.byDefault, rule.max);
  return { given, clamped: asked !== undefined && asked > rule.max };
}

export type ReadLimit = {
  /** Seconds to wait (Retry-After) when a read is over its one a window; 0 when it may go (it is then counted). */
  check(method: string): number;
};

/** One read per method per `windowMs` (Slack's minute; shorter in tests), as outside the Marketplace. */
export function createReadLimit(windowMs: number, now: () => number = Date.now): ReadLimit {
  const last = new Map<string, number>();
  return {
    check(method) {
      if (!READ_METHODS.includes(method)) return 0;
      const at = now();
      const previous = last.get(method);
      if (previous !== undefined && at - previous < windowMs) {
        return Math.max(1, Math.ceil((previous + windowMs - at) / 1000));
      }
      last.set(method, at);
      return 0;
    },
  };
}
