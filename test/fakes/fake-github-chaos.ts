import type { Chaos } from './chaos.ts';
import { networkFaults } from './chaos-faults.ts';

/**
 * GitHub's transient faults under chaos (chaos.ts). REST and GraphQL: a secondary rate limit (403
 * or 429 with Retry-After and GitHub's message, which Octokit's throttling recognises), a 502 from
 * GitHub's front end, and the network's faults (chaos-faults.ts): an answer held back 1 to 2 s, a
 * connection dropped before any answer (nothing done; on REST rolled apart, `networkFault`); on
 * REST writes also the request done and its answer lost with the connection. Git over HTTP (`githubGitChaosFault`): a 502 or 500 from
 * the git front end, a slow or dropped connection, and on a push the refs updated and the answer
 * lost.
 */
export type GitHubChaosFault =
  | { kind: 'answer'; status: number; headers: Record<string, string>; body: Record<string, unknown> }
  | { kind: 'drop-after-accept' }
  | { kind: 'slow' }
  | { kind: 'dropped' };

const secondaryLimit = {
  message:
    'You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.',
  documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
};

/** A REST call's fault (`operationId` from GitHub's OpenAPI description), or undefined to answer it. */
export function githubChaosFault(
  chaos: Chaos | undefined,
  method: string,
  operationId: string,
  subject?: string,
): GitHubChaosFault | undefined {
  if (!chaos) return undefined;
  const write = method !== 'GET' && method !== 'HEAD';
  const kinds = ['secondary-limit-403', 'secondary-limit-429', 'bad-gateway', ...(write ? ['drop-after-accept'] : [])];
  return faultOf(chaos.roll('github', operationId, kinds, subject));
}

/** A GraphQL request's fault: its answers are all-or-nothing, so no write is done with its answer lost. */
export function githubGraphQLChaosFault(chaos: Chaos | undefined): GitHubChaosFault | undefined {
  if (!chaos) return undefined;
  return faultOf(
    chaos.roll('github', 'graphql', ['secondary-limit-403', 'secondary-limit-429', 'bad-gateway', ...networkFaults]),
  );
}

function faultOf(kind: string | undefined): GitHubChaosFault | undefined {
  if (kind === 'secondary-limit-403' || kind === 'secondary-limit-429')
    return {
      kind: 'answer',
      status: kind === 'secondary-limit-403' ? 403 : 429,
      headers: { 'retry-after': '1', 'x-ratelimit-remaining': '4000' },
      body: secondaryLimit,
    };
  if (kind === 'bad-gateway') return { kind: 'answer', status: 502, headers: {}, body: { message: 'Server Error' } };
  if (kind === 'drop-after-accept' || kind === 'slow' || kind === 'dropped') return { kind };
  return undefined;
}

export type GitChaosFault =
  | { kind: 'answer'; status: 500 | 502; body: string }
  | { kind: 'slow' }
  | { kind: 'dropped' }
  | { kind: 'drop-after-update' };

/**
 * A git smart HTTP request's fault. `service` is git-upload-pack (clone, fetch) or
 * git-receive-pack (push); `phase` is the ref advertisement (info/refs) or the pack exchange (the
 * POST). Only a push's pack exchange can be done and its answer lost: receive-pack updated the
 * refs, and the pusher hears nothing.
 */
export function githubGitChaosFault(
  chaos: Chaos | undefined,
  service: string,
  phase: 'info/refs' | 'pack',
  subject?: string,
): GitChaosFault | undefined {
  if (!chaos) return undefined;
  const push = service === 'git-receive-pack' && phase === 'pack';
  const kinds = ['bad-gateway', 'server-error', ...networkFaults, ...(push ? ['drop-after-update'] : [])];
  const kind = chaos.roll('github-git', `${service} ${phase}`, kinds, subject);
  // GitHub's git front end answers its errors in plain text.
  if (kind === 'bad-gateway') return { kind: 'answer', status: 502, body: 'Bad Gateway\n' };
  if (kind === 'server-error') return { kind: 'answer', status: 500, body: 'Internal Server Error\n' };
  if (kind === 'slow' || kind === 'dropped' || kind === 'drop-after-update') return { kind };
  return undefined;
}
