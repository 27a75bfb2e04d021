import { describe, expect, it } from 'vitest';
import { checksSandboxId, sandboxSession } from '../../src/core/checks-sandbox.ts';

describe("the checks' own sandbox works for its session", () => {
  it.each([
    ['a session sandbox is its own', 'a1b2', 'a1b2'],
    ["a session's checks sandbox is the session's", checksSandboxId('a1b2'), 'a1b2'],
    ['only the suffix at the end counts', 'a1-checks-b2', 'a1-checks-b2'],
  ])('%s', (_name, sandboxId, session) => {
    expect(sandboxSession(sandboxId)).toBe(session);
  });

  it('gives the checks a workspace id of their own', () => {
    expect(checksSandboxId('a1b2')).not.toBe('a1b2');
  });
});
