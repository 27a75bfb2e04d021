import type { PatchbayOctokit } from './github-client.ts';

type Cached = { query: string; etag: string; data: unknown };

/**
 * GET with GitHub's conditional requests: the ETag of the last answer goes out as If-None-Match,
 * and a 304 (which GitHub does not count against the rate limit) hands back the answer kept from
 * before. One cache per poller, keyed by the route and its parameters; kept in memory only (a
 * restarted process pays one full answer per list). A list is cached under its parameters but `since`,
 * with the whole query it was asked with, so a moved `since` replaces its entry instead of adding one.
 */
export class ConditionalGet {
  readonly #cache = new Map<string, Cached>();
  /** Answers GitHub sent in full, and answers it said had not changed (for logs and tests). */
  readonly counts = { full: 0, notModified: 0 };

  async get(
    octokit: PatchbayOctokit,
    route: string,
    params: Record<string, string | number>,
    signal: AbortSignal,
  ): Promise<unknown> {
    const { since: _since, ...identity } = params;
    const key = `${route} ${JSON.stringify(identity)}`;
    const query = JSON.stringify(params);
    const kept = this.#cache.get(key);
    const cached = kept?.query === query ? kept : undefined;
    try {
      const response = await octokit.request(route, {
        ...params,
        headers: cached ? { 'if-none-match': cached.etag } : {},
        request: { signal },
      });
      this.counts.full += 1;
      const etag = response.headers.etag;
      if (etag) this.#cache.set(key, { query, etag, data: response.data });
      return response.data;
    } catch (error) {
      // Octokit reports a 304 as an error carrying the status.
      if (cached && (error as { status?: unknown }).status === 304) {
        this.counts.notModified += 1;
        return cached.data;
      }
      throw error;
    }
  }
}
