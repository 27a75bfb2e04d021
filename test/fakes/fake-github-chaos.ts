import type { Chaos } from './chaos.ts';

/**
 * GitHub REST's transient faults under chaos (chaos.ts): a secondary rate limit (403 or 429 with
 * Retry-After and GitHub's message, which Octokit's throttling recognises), a 502 from GitHub's
 * front end, and, on writes only, the request done and its answer lost with the connection.
 */
export type GitHubChaosFault =
  | { kind: 'answer'; status: number; headers: Record<string, string>; body: Record<string, unknown> }
  | { kind: 'drop-after-accept' };

const secondaryLimit = {
  message:
    'You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.',
  documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
};

export function githubChaosFault(
  chaos: Chaos | undefined,
  method: string,
  operationId: string,
  subject?: string,
): GitHubChaosFault | undefined {
  if (!chaos) return undefined;
  const write = method !== 'GET' && method !== 'HEAD';
  const kinds = ['secondary-limit-403', 'secondary-limit-429', 'bad-gateway', ...(write ? ['drop-after-accept'] : [])];
  const kind = chaos.roll('github', operationId, kinds, subject);
  if (kind === 'secondary-limit-403' || kind === 'secondary-limit-429')
    return {
      kind: 'answer',
      status: kind === 'secondary-limit-403' ? 403 : 429,
      headers: { 'retry-after': '1', 'x-ratelimit-remaining': '4000' },
      body: secondaryLimit,
    };
  if (kind === 'bad-gateway') return { kind: 'answer', status: 502, headers: {}, body: { message: 'Server Error' } };
  if (kind === 'drop-after-accept') return { kind };
  return undefined;
}
