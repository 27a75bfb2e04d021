import { describe, expect, it } from 'vitest';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import { openApprovalId, relayedId, splitRelayedRequestId } from '../../src/core/relayed-approval.ts';

const child = '5b0c5bde-2f5e-4c1a-9d7e-0c2f3b1a9e11';
const requested = (requestId: string): SessionEvent => ({
  type: 'approval-requested',
  requestId,
  command: 'npm publish',
  classes: ['publish'],
  reasons: ['Publishing releases code.'],
  approving: 'Runs it once.',
  expiresAt: '2026-12-01T11:00:00.000Z',
});
const decided = (requestId: string): SessionEvent => ({
  type: 'approval-decided',
  requestId,
  decision: 'denied',
  surface: 'system',
  at: '2026-12-01T10:30:00.000Z',
});
const log = (...events: SessionEvent[]) => ({
  events: async (): Promise<StoredEvent[]> =>
    events.map((event, i) => ({ sessionId: 'p', seq: i + 1, at: '2026-12-01T10:00:00.000Z', event })),
});
const waitingOnChildren = { id: 'p', status: 'waiting' as const, pendingQuestion: null };

describe("a sub-task's approval request in its parent's thread", () => {
  it('names the child, and a session’s own ids (a tool call, a held push) name none', () => {
    expect(splitRelayedRequestId(relayedId(child, 'push:7'))).toEqual({ childId: child, requestId: 'push:7' });
    expect(splitRelayedRequestId('toolu_01A')).toBeUndefined();
    expect(splitRelayedRequestId('push:7')).toBeUndefined();
  });

  it('a written reply decides the oldest relayed request still open, the session’s own first, nothing while running', async () => {
    const first = relayedId(child, 'call_1');
    const second = relayedId(child, 'call_2');
    expect(await openApprovalId(log(requested(first), decided(first), requested(second)), waitingOnChildren)).toBe(
      second,
    );
    expect(await openApprovalId(log(requested(first), decided(first)), waitingOnChildren)).toBeUndefined();
    expect(await openApprovalId(log(requested(second)), { ...waitingOnChildren, status: 'running' })).toBeUndefined();
    const own = { questionId: 'approval:call_9', toolCallId: 'call_9', question: 'Approve?' };
    const approval = { requestId: 'call_9', command: 'npm publish', classes: [], reasons: [], expiresAt: '' };
    expect(
      await openApprovalId(log(requested(second)), { ...waitingOnChildren, pendingQuestion: { ...own, approval } }),
    ).toBe('call_9');
    expect(
      await openApprovalId(log(requested(second)), { ...waitingOnChildren, pendingQuestion: own }),
    ).toBeUndefined();
  });
});
