import { describe, expect, it } from 'vitest';
import { egressActivity, egressPrompt } from '../../integrations/linear/linear-egress.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';

const thread: ThreadRef = { source: 'linear', agentSessionId: 'as-1', issueId: 'iss-1' };
const actor = { source: 'linear' as const, id: 'u-1', name: 'Lin' };

describe('blocked connections in a Linear agent session', () => {
  it('a host the allowlist refused is a thought that says how to allow it; an address is not offered', () => {
    expect(
      egressActivity({ type: 'egress-blocked', host: 'pkg.example.com', port: 443, reason: 'not-allowed' }),
    ).toEqual({
      content: {
        type: 'thought',
        body: 'The sandbox was refused pkg.example.com:443 (not in SANDBOX_EGRESS_ALLOW). If the work needs it, reply `allow pkg.example.com:443 for this session` or `allow pkg.example.com:443 for this repository`.',
      },
    });
    expect(egressActivity({ type: 'egress-blocked', host: '10.0.0.7', port: 80, reason: 'private' })).toBeUndefined();
  });

  it('the allowance is a thought with who, what and where', () => {
    const allowed = {
      type: 'egress-allowed' as const,
      host: 'pkg.example.com',
      port: 443,
      scope: 'repository' as const,
      actor,
      surface: 'linear',
      at: '2026-12-01T20:00:00.000Z',
    };
    expect(egressActivity(allowed)?.content).toEqual({
      type: 'thought',
      body: 'Lin allowed network access to pkg.example.com:443 for this repository, from linear.',
    });
  });

  it('a prompt `allow <host> for this session` is an egress-allow for the requester to give (not vouched)', () => {
    expect(
      egressPrompt({ thread, actor, body: 'allow pkg.example.com:443 for this session', dedupeKey: 'k1' }),
    ).toEqual({
      kind: 'egress-allow',
      thread,
      actor,
      host: 'pkg.example.com',
      port: 443,
      scope: 'session',
      dedupeKey: 'k1',
    });
    expect(egressPrompt({ thread, actor, body: 'keep going', dedupeKey: 'k2' })).toBeUndefined();
  });
});
