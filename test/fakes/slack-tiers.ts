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
