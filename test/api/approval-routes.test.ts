import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiServer } from '../../src/api/server.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

const TOKEN = 'test-token-0123456789abcdef';

describe('POST /api/sessions/:id/approvals/:requestId', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  beforeAll(async () => {
    fx = await createApiFixture();
    app = fx.server({ apiToken: TOKEN });
  });
  afterAll(() => fx.close());

  const auth = { authorization: `Bearer ${TOKEN}` };

  /** A web session waiting on an approval request for `call_1`, as a held run leaves it. */
  async function heldSession(): Promise<string> {
    const created = await app.inject({
      method: 'POST',
      url: '/api/sessions',
      headers: auth,
      payload: { repo: 'https://example.com/acme/widgets.git', prompt: 'Release it', author: { name: 'Alice' } },
    });
    const { id } = created.json() as { id: string };
    await fx.store.transition(id, 'start');
    const approval = {
      requestId: 'call_1',
      command: 'npm publish',
      classes: ['publish'],
      reasons: ['publishes'],
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    };
    await fx.store.commitStep(id, {
      patch: {
        pendingQuestion: { questionId: 'approval:call_1', toolCallId: 'call_1', question: 'Approve?', approval },
      },
    });
    await fx.store.transition(id, 'ask');
    return id;
  }

  const decide = (id: string, payload: object, headers: Record<string, string> = auth, requestId = 'call_1') =>
    app.inject({ method: 'POST', url: `/api/sessions/${id}/approvals/${requestId}`, headers, payload });

  it('records the decision with who, where and when, queues the run, and shows it in the events', async () => {
    const id = await heldSession();
    const res = await decide(id, { decision: 'denied', reason: 'not today', author: { name: 'Operator' } });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ id, status: 'queued' });
    const events = (await app.inject({ url: `/api/sessions/${id}/events?format=json`, headers: auth })).json() as {
      event: { type: string };
    }[];
    const decided = events.map((e) => e.event).filter((e) => e.type === 'approval-decided');
    expect(decided).toEqual([
      {
        type: 'approval-decided',
        requestId: 'call_1',
        decision: 'denied',
        actor: { source: 'web', id: 'api', name: 'Operator' },
        surface: 'web',
        reason: 'not today',
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
    // Decided once: a second answer finds no open request.
    expect((await decide(id, { decision: 'approved' })).statusCode).toBe(409);
  });

  it('refuses an unknown request, a bad body, no token, and a cross-site page', async () => {
    const id = await heldSession();
    expect((await decide(id, { decision: 'approved' }, auth, 'call_2')).statusCode).toBe(409);
    expect((await decide(id, { decision: 'maybe' })).statusCode).toBe(400);
    expect((await decide(id, { decision: 'approved' }, {})).statusCode).toBe(401);
    const evil = { ...auth, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    expect((await decide(id, { decision: 'approved' }, evil)).statusCode).toBe(403);
    expect((await fx.store.get(id))?.status).toBe('waiting');
  });
});
