import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineGate, type EngineGateOptions } from '../../src/engines/engine-gate.ts';
import { answerApproval } from '../../src/sessions/inbound/approval-answer.ts';
import { alice, bob, createRunnerFixture, type RunnerFixture } from '../agent/runner/runner-fixture.ts';

const DEPLOY = 'kubectl apply -f k8s.yaml';
const queue = { enqueue: async () => {} };

/**
 * The engine gate on the real store and a real sandbox (the one the risk classifier reads scripts
 * from): what it answers an engine's hook while a held command waits, when the request expires,
 * when a hook asks again about the same call, and how a person's decision reaches a running run.
 */
describe('the engine gate', () => {
  let fx: RunnerFixture;
  let clock: number;
  beforeAll(async () => {
    fx = await createRunnerFixture();
  });
  afterAll(() => fx.close());

  async function gateFor(sessionId: string, options: Partial<EngineGateOptions> = {}) {
    clock = Date.parse('2026-12-07T05:00:00Z');
    return createEngineGate({
      sessionId,
      sandbox: await fx.sandboxFor(sessionId),
      runLog: fx.store,
      approvals: { rules: [{}] },
      approvalTimeoutMs: 60 * 60_000,
      signal: new AbortController().signal,
      log: pino({ level: 'silent' }),
      now: () => clock,
      waitMs: 0,
      pollMs: 10,
      ...options,
    });
  }
  const requestOf = async (id: string) => {
    const requested = (await fx.store.events(id, { types: ['approval-requested'] })).map((e) => e.event);
    expect(requested).toHaveLength(1);
    return requested[0]!.type === 'approval-requested' ? requested[0]!.requestId : '';
  };

  it('a held command is pending until a person approves it on the running session; then allowed, once decided', async () => {
    const id = await fx.newSession('Deploy it');
    const gate = await gateFor(id);
    expect(await gate.judge({ callId: 'toolu_1', command: DEPLOY })).toEqual({ decision: 'pending' });
    const requestId = await requestOf(id);
    const session = (await fx.store.get(id))!;
    expect(session.status).toBe('running');
    expect(session.pendingQuestion?.approval).toMatchObject({ requestId, command: DEPLOY, live: true });
    // Asking again about the same call does not hold it twice; another command under its id is denied.
    expect(await gate.judge({ callId: 'toolu_1', command: DEPLOY })).toEqual({ decision: 'pending' });
    expect(await gate.judge({ callId: 'toolu_1', command: 'rm -rf /' })).toMatchObject({ decision: 'deny' });
    await requestOf(id);

    // Only the requester (or a surface that vouches) decides; the run is not re-queued, it is running.
    const refused = await answerApproval({ store: fx.store, queue }, session, {
      requestId,
      decision: 'approved',
      actor: bob,
      surface: 'slack',
    });
    expect(refused.kind).toBe('not-allowed');
    const answered = await answerApproval({ store: fx.store, queue }, session, {
      requestId,
      decision: 'approved',
      actor: alice,
      surface: 'web',
    });
    expect(answered).toMatchObject({ kind: 'decided', session: { status: 'running' } });
    expect(await gate.judge({ callId: 'toolu_1', command: DEPLOY })).toEqual({ decision: 'allow' });
    expect((await fx.store.get(id))?.pendingQuestion).toBeNull();
    // A second answer finds no request.
    const again = await answerApproval({ store: fx.store, queue }, (await fx.store.get(id))!, {
      requestId,
      decision: 'denied',
      actor: alice,
      surface: 'web',
    });
    expect(again.kind).toBe('no-request');
  });

  it('a request nobody answers expires: denied with the reason, and the expiry is in the log', async () => {
    const id = await fx.newSession('Deploy it later');
    const gate = await gateFor(id);
    expect(await gate.judge({ callId: 'toolu_2', command: DEPLOY })).toEqual({ decision: 'pending' });
    clock += 61 * 60_000;
    const answer = await gate.judge({ callId: 'toolu_2', command: DEPLOY });
    expect(answer).toMatchObject({ decision: 'deny', reason: expect.stringContaining('no one answered within 60') });
    const decided = (await fx.store.events(id, { types: ['approval-decided'] })).map((e) => e.event);
    expect(decided).toMatchObject([{ decision: 'expired', surface: 'system' }]);
    expect((await fx.store.get(id))?.pendingQuestion).toBeNull();
  });

  it('refuses publishing outright and lets plain commands run, without asking anyone', async () => {
    const id = await fx.newSession('Release');
    const gate = await gateFor(id);
    expect(await gate.judge({ callId: 'a', command: 'npm publish' })).toMatchObject({
      decision: 'deny',
      reason: expect.stringMatching(/^Command refused: .*publish/),
    });
    expect(await gate.judge({ callId: 'b', command: 'npm test' })).toEqual({ decision: 'allow' });
    expect(await fx.store.events(id, { types: ['approval-requested'] })).toEqual([]);
  });

  it('an open request is closed when the run ends', async () => {
    const id = await fx.newSession('Deploy and stop');
    const gate = await gateFor(id);
    await gate.judge({ callId: 'toolu_3', command: DEPLOY });
    await gate.close();
    const decided = (await fx.store.events(id, { types: ['approval-decided'] })).map((e) => e.event);
    expect(decided).toMatchObject([{ decision: 'expired', reason: 'the engine run ended first' }]);
    expect((await fx.store.get(id))?.pendingQuestion).toBeNull();
  });
});
