import { describe, expect, it } from 'vitest';
import { readBatch, renderProgress } from '../../integrations/github/render-progress.ts';
import type { StoredEvent } from '../../src/core/events.ts';

const at = '2026-01-01T00:00:00.000Z';
const stored = (seq: number, event: StoredEvent['event']): StoredEvent => ({ sessionId: 's1', seq, at, event });

describe('the GitHub progress comment and refused network access', () => {
  it('lists each refused host of the request once, under the status, with how to allow it', () => {
    const events = [
      stored(1, { type: 'egress-blocked', host: 'old.example', port: 443, reason: 'not-allowed' }),
      stored(5, { type: 'tool-start', callId: 'c1', name: 'run_shell', input: { command: 'npm install' } }),
      stored(6, { type: 'egress-blocked', host: 'evil.example', port: 443, reason: 'not-allowed' }),
      stored(7, { type: 'egress-blocked', host: 'fd00:ec2::254', port: 80, reason: 'private' }),
    ];
    const batch = readBatch(events, 4, 'running');
    expect(batch.blocked).toEqual([
      'evil.example:443 (not in SANDBOX_EGRESS_ALLOW)',
      '[fd00:ec2::254]:80 (a private address)',
    ]);
    const body = renderProgress({
      session: { status: 'running', pendingQuestion: null, error: null, result: null },
      ...batch,
      sessionUrl: 'http://patchbay.test/sessions/s1',
      mention: '@patchbay',
    });
    expect(body).toContain('🔄 Working on it.');
    expect(body).toContain(
      '> 🚫 Network access refused: evil.example:443 (not in SANDBOX_EGRESS_ALLOW), [fd00:ec2::254]:80 (a private address). If the work needs a host the allowlist refused, reply `@patchbay allow <host> for this session` (or `for this repository`), or an admin can add it to SANDBOX_EGRESS_ALLOW.',
    );
    expect(body).not.toContain('old.example');
    const quiet = renderProgress({
      session: { status: 'running', pendingQuestion: null, error: null, result: null },
      sessionUrl: 'http://patchbay.test/sessions/s1',
      mention: '@patchbay',
    });
    expect(quiet).not.toContain('Network access refused');
  });
});
