import { describe, expect, it } from 'vitest';
import { approvalPrompt } from '../../integrations/linear/linear-approvals.ts';
import { initialPlan, renderActivities } from '../../integrations/linear/render-activities.ts';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';

const ada = { source: 'linear' as const, id: 'u1', name: 'Ada' };
const thread = { source: 'linear' as const, agentSessionId: 'a', issueId: 'i' };
const stored = (events: SessionEvent[]): StoredEvent[] =>
  events.map((event, i) => ({ sessionId: 's', seq: i + 1, at: new Date(0).toISOString(), event }));
const approval = {
  requestId: 'call_1',
  command: 'npm publish',
  classes: ['publish'],
  reasons: ['Publishing releases code.'],
  expiresAt: '2026-12-01T11:00:00.000Z',
};
const sessions = { events: async () => [] };
const waiting = {
  id: 's',
  status: 'waiting' as const,
  pendingQuestion: { questionId: 'approval:call_1', toolCallId: 'call_1', question: 'Approve?', approval },
};

describe('approvals in Linear', () => {
  it('asks with a select elicitation (Approve once, Deny) and tells the decision', () => {
    const { activities } = renderActivities({
      events: stored([
        { type: 'status-changed', from: 'queued', to: 'running' },
        { type: 'approval-requested', ...approval, approving: 'Approving runs exactly this command once.' },
        {
          type: 'approval-decided',
          requestId: 'call_1',
          decision: 'denied',
          actor: ada,
          surface: 'linear',
          reason: 'not today',
          at: '2026-12-01T10:00:00.000Z',
        },
      ]),
      state: { shownSeq: 0, plan: initialPlan(), openCalls: {}, lastPostedAt: 0 },
      session: { status: 'running', result: null, error: null, repo: 'https://github.com/acme/shop' },
      sessionUrl: 'http://patchbay.test/sessions/s',
    });
    const asked = activities.find((a) => a.content.type === 'elicitation')!;
    const body = 'body' in asked.content ? asked.content.body : '';
    expect(body).toContain('```\nnpm publish\n```');
    expect(body).toContain('Held for publish: Publishing releases code.');
    expect(asked.options).toEqual([{ value: 'Approve once' }, { value: 'Deny' }]);
    expect(activities.at(-1)!.content).toEqual({ type: 'thought', body: 'Denied by Ada from linear: not today' });
  });

  it("reads the chosen option or `deny <reason>` as the request's decision, and nothing else", async () => {
    const input = { thread, actor: ada, dedupeKey: 'd1' };
    expect(await approvalPrompt(sessions, waiting, { ...input, body: 'Approve once' })).toEqual({
      kind: 'approval',
      thread,
      actor: ada,
      requestId: 'call_1',
      decision: 'approved',
      dedupeKey: 'd1',
    });
    expect(await approvalPrompt(sessions, waiting, { ...input, body: 'deny ship it from CI' })).toMatchObject({
      decision: 'denied',
      reason: 'ship it from CI',
    });
    expect(await approvalPrompt(sessions, waiting, { ...input, body: 'what does it publish?' })).toBeUndefined();
    expect(
      await approvalPrompt(sessions, { ...waiting, status: 'running' }, { ...input, body: 'Approve once' }),
    ).toBeUndefined();
  });
});
