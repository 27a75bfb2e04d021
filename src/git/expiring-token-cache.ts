export type ExpiringToken = { token: string; expiresAt: Date };

export type ExpiringTokenCache = {
  /** A token for `key` that stays valid for at least the cache's margin; mints one when needed. */
  get(key: string, signal?: AbortSignal): Promise<ExpiringToken>;
  forget(key: string): void;
};

/**
 * Caches short-lived credentials (GitHub installation tokens) on the host until shortly before they
 * expire. Concurrent callers for the same key share one mint. The margin covers the longest git
 * call that uses the token: a token must not expire halfway through a clone or push.
 */
export function createExpiringTokenCache(deps: {
  mint: (key: string, signal?: AbortSignal) => Promise<ExpiringToken>;
  now?: () => number;
  marginMs?: number;
}): ExpiringTokenCache {
  const now = deps.now ?? Date.now;
  const marginMs = deps.marginMs ?? 15 * 60_000;
  const tokens = new Map<string, ExpiringToken>();
  const minting = new Map<string, Promise<ExpiringToken>>();

  return {
    async get(key, signal) {
      const cached = tokens.get(key);
      if (cached && cached.expiresAt.getTime() - now() > marginMs) return cached;
      const pending = minting.get(key);
      if (pending) return pending;
      const next = deps
        .mint(key, signal)
        .then((token) => {
          tokens.set(key, token);
          return token;
        })
        .finally(() => minting.delete(key));
      minting.set(key, next);
      return next;
    },
    forget(key) {
      tokens.delete(key);
    },
  };
}
