/** The response headers the retry policy reads; `Headers` and a plain lower-cased record both fit. */
export type HeaderLookup = { get(name: string): string | null | undefined };

/** A plain record of lower-cased names (a test's, or a parsed error's) as a HeaderLookup. */
export function headerLookup(headers: unknown): HeaderLookup | undefined {
  if (headers instanceof Headers) return headers;
  if (typeof headers !== 'object' || headers === null) return undefined;
  const record = headers as Record<string, unknown>;
  return {
    get: (name) => {
      const value = record[name.toLowerCase()];
      return typeof value === 'string' ? value : undefined;
    },
  };
}

/**
 * How long the server asked us to wait, in milliseconds, or undefined when it did not say.
 * In order: `retry-after-ms` (both SDKs' vendors send it), `retry-after` (seconds or an HTTP date),
 * then the rate-limit windows that are spent: Anthropic's `anthropic-ratelimit-<limit>-reset`
 * (RFC 3339 instants) and OpenAI's `x-ratelimit-reset-<limit>` (durations like `6m0s`, `20ms`),
 * each counted only when its `remaining` is 0; with several spent, the latest reset.
 */
export function retryAfterMs(headers: HeaderLookup | undefined, now: number): number | undefined {
  if (!headers) return undefined;
  const ms = finiteNumber(headers.get('retry-after-ms'));
  if (ms !== undefined && ms >= 0) return Math.ceil(ms);
  const after = headers.get('retry-after')?.trim();
  if (after) {
    const seconds = finiteNumber(after);
    if (seconds !== undefined) return seconds >= 0 ? Math.ceil(seconds * 1000) : undefined;
    const at = Date.parse(after);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  return spentWindowReset(headers, now);
}

const anthropicLimits = ['requests', 'tokens', 'input-tokens', 'output-tokens'];
const openaiLimits = ['requests', 'tokens'];

function spentWindowReset(headers: HeaderLookup, now: number): number | undefined {
  const waits: number[] = [];
  for (const limit of anthropicLimits) {
    if (finiteNumber(headers.get(`anthropic-ratelimit-${limit}-remaining`)) !== 0) continue;
    const at = Date.parse(headers.get(`anthropic-ratelimit-${limit}-reset`) ?? '');
    if (!Number.isNaN(at)) waits.push(Math.max(0, at - now));
  }
  for (const limit of openaiLimits) {
    if (finiteNumber(headers.get(`x-ratelimit-remaining-${limit}`)) !== 0) continue;
    const wait = durationMs(headers.get(`x-ratelimit-reset-${limit}`) ?? '');
    if (wait !== undefined) waits.push(wait);
  }
  return waits.length > 0 ? Math.ceil(Math.max(...waits)) : undefined;
}

/** A Go-style duration as OpenAI writes it (`1s`, `6m0s`, `1h2m3.5s`, `250ms`); a bare number is seconds. */
export function durationMs(text: string): number | undefined {
  const trimmed = text.trim();
  if (!trimmed) return undefined;
  const bare = finiteNumber(trimmed);
  if (bare !== undefined) return bare >= 0 ? bare * 1000 : undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 1e-6 };
  let total = 0;
  let rest = trimmed;
  while (rest) {
    const part = /^(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/.exec(rest);
    if (!part) return undefined;
    total += Number(part[1]) * (unit[part[2] ?? ''] ?? 0);
    rest = rest.slice(part[0].length);
  }
  return total;
}

function finiteNumber(text: string | null | undefined): number | undefined {
  if (text === null || text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
