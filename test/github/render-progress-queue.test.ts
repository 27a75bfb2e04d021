import { describe, expect, it } from 'vitest';
import { readBatch, renderProgress } from '../../integrations/github/render-progress.ts';
import type { StoredEvent } from '../../src/core/events.ts';

const at = '2026-01-01T00:00:00.000Z';
const stored = (seq: number, event: StoredEvent['event']): StoredEvent => ({ sessionId: 's1', seq, at, event });
const view = { sessionUrl: 'http://patchbay.test/sessions/s1', mention: '@patchbay' };

describe('the GitHub progress comment of a session that waits for a worker', () => {
  it('says where it stands while queued, then that it started after waiting', () => {
    const waiting = readBatch(
      [stored(3, { type: 'queue-waiting', ahead: 2, running: 4, limit: 4, since: at })],
      0,
      'queued',
    );
    expect(
      renderProgress({
        session: { status: 'queued', pendingQuestion: null, error: null, result: null },
        ...waiting,
        ...view,
      }),
    ).toBe(
      '⏳ Queued: 2 sessions ahead of you (4 of at most 4 running). I will start as soon as a worker is free. [Session](http://patchbay.test/sessions/s1)',
    );
    const started = readBatch(
      [
        stored(4, { type: 'queue-started', waitedMs: 83_000, since: at }),
        stored(5, { type: 'status-changed', from: 'queued', to: 'running' }),
      ],
      3,
      'running',
    );
    expect(
      renderProgress({
        session: { status: 'running', pendingQuestion: null, error: null, result: null },
        ...started,
        ...view,
      }),
    ).toContain('🔄 Working on it. Starting now, after waiting 1 min 23 s in the queue.');
    // A session that never waited says nothing of a queue.
    expect(
      renderProgress({
        session: { status: 'queued', pendingQuestion: null, error: null, result: null },
        ...readBatch([], 0, 'queued'),
        ...view,
      }),
    ).toBe('⏳ Queued. [Session](http://patchbay.test/sessions/s1)');
  });
});
