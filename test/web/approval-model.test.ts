import { describe, expect, it } from 'vitest';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import { SessionModel } from '../../web/src/session-model.ts';

let seq = 0;
const stored = (event: SessionEvent): StoredEvent => ({
  sessionId: 's',
  seq: ++seq,
  at: '2026-12-01T10:00:00.000Z',
  event,
});
const requested = {
  type: 'approval-requested' as const,
  requestId: 'call_1',
  command: 'npm publish',
  classes: ['publish'],
  reasons: ['Publishing releases code to the world.'],
  approving: 'Approving runs exactly this command once.',
  expiresAt: '2026-12-01T11:00:00.000Z',
};

describe('approvals on the session page', () => {
  it('offers the open request until its decision, and shows both in the timeline with who decided', () => {
    const model = new SessionModel();
    model.apply(stored(requested));
    expect(model.openApprovals).toEqual([requested]);
    model.apply(
      stored({
        type: 'approval-decided',
        requestId: 'call_1',
        decision: 'denied',
        actor: { source: 'slack', id: 'U1', name: 'Alice Doe' },
        surface: 'slack',
        reason: 'not on a Friday',
        at: '2026-12-01T10:05:00.000Z',
      }),
    );
    expect(model.openApprovals).toEqual([]);
    const texts = model.items.flatMap((i) => ('text' in i ? [i.text] : []));
    expect(texts).toEqual([
      'Approval asked to run `npm publish` (held for publish): Publishing releases code to the world.',
      'Denied by Alice Doe from slack: not on a Friday',
    ]);
  });

  it("keeps each sub-task's request open until its own decision, on a parent's page", () => {
    const model = new SessionModel();
    const first = { ...requested, requestId: 'child-1:call_1' };
    const second = { ...requested, requestId: 'child-2:call_1', command: 'npm publish --tag next' };
    model.apply(stored(first));
    model.apply(stored(second));
    expect(model.openApprovals).toEqual([first, second]);
    const decided = {
      type: 'approval-decided' as const,
      decision: 'approved' as const,
      actor: { source: 'web' as const, id: 'ada', name: 'Ada' },
      surface: 'web' as const,
      at: '2026-12-01T10:05:00.000Z',
    };
    model.apply(stored({ ...decided, requestId: second.requestId }));
    expect(model.openApprovals).toEqual([first]);
    model.apply(stored({ ...decided, requestId: first.requestId }));
    expect(model.openApprovals).toEqual([]);
  });
});
