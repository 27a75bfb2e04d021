import { describe, expect, it } from 'vitest';
import type { InjectedFault } from '../fakes/chaos.ts';
import { describeAttribution, faultThatEnded } from './chaos-attribution.ts';

const fault = (service: string, operation: string, kind: string, subject?: string): InjectedFault => ({
  service,
  operation,
  kind,
  ...(subject !== undefined && { subject }),
});

/** Faults of two sessions interleaved, and one with no subject (an installation token request). */
const injected = [
  fault('github', 'pulls/create', 'bad-gateway', 'octo-org/web-1'),
  fault('anthropic', 'messages', 'overloaded', 'task-0'),
  fault('github', 'apps/create-installation-access-token', 'bad-gateway'),
  fault('slack', 'chat.postMessage', 'drop-after-accept', 'C0CHAOS000'),
  fault('github', 'issues/create-comment', 'secondary-limit-429', 'octo-org/web-1'),
];
const slackSession = ['task-0', 'octo-org/web-0', 'C0CHAOS000'];
const githubSession = ['task-1', 'octo-org/web-1'];

describe('which injected fault ended a failed session', () => {
  it.each([
    [
      'its own fault on the service its error names',
      slackSession,
      'The model service is overloaded',
      'anthropic overloaded on messages (task-0)',
    ],
    [
      'its own last fault when the error names no service',
      slackSession,
      'something broke',
      'slack drop-after-accept on chat.postMessage (C0CHAOS000)',
    ],
    [
      'its own last GitHub fault, not another session’s',
      githubSession,
      'GitHub answered 429',
      'github secondary-limit-429 on issues/create-comment (octo-org/web-1)',
    ],
    [
      'a fault with no subject when it has none of its own',
      ['task-5', 'octo-org/web-5'],
      'GitHub answered 502',
      'github bad-gateway on apps/create-installation-access-token (no subject; the last such fault on that service), shared',
    ],
    [
      'none: no transient fault explains it',
      ['task-5', 'octo-org/web-5'],
      'Linear refused the activity',
      'no injected fault of its own: a product bug or a refusal',
    ],
  ])('%s', (_, subjects, error, expected) => {
    expect(describeAttribution(faultThatEnded({ subjects, error }, injected))).toBe(expected);
  });
});
