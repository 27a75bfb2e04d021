import { describe, expect, it } from 'vitest';
import { describeGate, NO_PULL_REQUEST, publishedGate, type GateDecision } from '../../src/core/evidence.ts';

const commit = '0123456789abcdef0123';
const decision = (reasons: string[]): GateDecision => ({
  commit,
  ready: reasons.length === 0,
  reasons,
  evidence: { commit, checks: [] },
});

describe('a review gate in words, the same on every surface', () => {
  it.each([
    ['passed, with a pull request', publishedGate(decision([]), true), 'ready for review at 0123456789ab'],
    [
      'failed, with a pull request',
      publishedGate(decision(['`npm test` failed (exit 1)']), true),
      'kept as draft at 0123456789ab: `npm test` failed (exit 1)',
    ],
    [
      'passed, no pull request',
      publishedGate(decision([]), false),
      `passed its gates at 0123456789ab; ${NO_PULL_REQUEST}`,
    ],
    [
      'failed, no pull request',
      publishedGate(decision(['the change was not verified']), false),
      'not ready at 0123456789ab (no pull request): the change was not verified',
    ],
  ])('%s', (_case, gate, words) => {
    expect(describeGate(gate)).toBe(words);
    // Nothing without a pull request is called a draft or ready for review.
    if (gate.reasons.includes(NO_PULL_REQUEST)) expect(describeGate(gate)).not.toMatch(/draft|ready for review/);
  });
});
