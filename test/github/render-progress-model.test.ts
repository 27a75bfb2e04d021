import { describe, expect, it } from 'vitest';
import { readBatch, renderProgress } from '../../integrations/github/render-progress.ts';
import type { StoredEvent } from '../../src/core/events.ts';

const at = '2026-01-01T00:00:00.000Z';
const stored = (seq: number, event: StoredEvent['event']): StoredEvent => ({ sessionId: 's1', seq, at, event });
const view = { sessionUrl: 'http://patchbay.test/sessions/s1', mention: '@patchbay' };

describe('the GitHub progress comment of a run that waits for the model service', () => {
  it('says the model service is overloaded and that the run waits, while it works', () => {
    const batch = readBatch(
      [
        stored(5, { type: 'status-changed', from: 'queued', to: 'running' }),
        stored(6, {
          type: 'model-waiting',
          code: 'model_overloaded',
          message: 'Anthropic is overloaded: Overloaded',
          retryInMs: 1_000,
        }),
      ],
      4,
      'running',
    );
    expect(
      renderProgress({
        session: { status: 'running', pendingQuestion: null, error: null, result: null },
        ...batch,
        ...view,
      }),
    ).toBe(
      '🔄 Working on it. The model service is overloaded right now (Anthropic is overloaded: Overloaded). I am waiting for it and will carry on where I was; nothing is lost.\n\n[Session](http://patchbay.test/sessions/s1)',
    );
  });
});
