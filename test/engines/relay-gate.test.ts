import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngineGate } from '../../src/engines/engine-gate.ts';
import { type RunningEngineRelay, startEngineRelay } from '../../src/engines/engine-relay.ts';

/**
 * The relay's gate route as an engine's hook reaches it (POST /gate with the run's token): the
 * gate's answer for an open run, and clear refusals for a closed run, a run without a gate and a
 * malformed call. Nothing is forwarded upstream.
 */
describe('the relay gate route', () => {
  let relay: RunningEngineRelay;
  const forwarded: string[] = [];
  const log = pino({ level: 'silent' });
  const runLog = { commitStep: async () => [], events: async () => [] };

  beforeAll(async () => {
    relay = await startEngineRelay({
      upstreams: { anthropic: { baseUrl: 'http://127.0.0.1:9', model: 'claude-sonnet-4-6', headers: {} } },
      runLog,
      log,
      sandboxUrl: (url) => url,
      fetch: (url) => {
        forwarded.push(String(url));
        return Promise.reject(new Error('nothing is forwarded in these tests'));
      },
    });
  });
  afterAll(() => relay?.close());

  const lease = (withGate: boolean) => {
    const signal = new AbortController().signal;
    const gate = createEngineGate({
      sessionId: 's-gate',
      // The plain commands below name no script, so the classifier reads nothing from the sandbox.
      sandbox: { workdir: '/workspace', readFile: async () => Promise.reject(new Error('no such file')) },
      runLog,
      approvals: { rules: [{}] },
      approvalTimeoutMs: 60_000,
      signal,
      log,
    });
    return relay.open({
      sessionId: 's-gate',
      engine: 'claude-code',
      api: 'anthropic',
      firstTurn: 0,
      maxCostUsd: 1,
      signal,
      ...(withGate && { gate }),
    });
  };
  const ask = (token: string, body: string) =>
    fetch(`${relay.url}/gate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': token },
      body,
    });

  it("answers the gate's decision for an open run", async () => {
    const { access } = lease(true);
    const refused = await ask(access.token, JSON.stringify({ callId: 'toolu_1', command: 'npm publish' }));
    expect(refused.status).toBe(200);
    expect(await refused.json()).toMatchObject({ decision: 'deny', reason: expect.stringMatching(/^Command refused/) });
    const allowed = await ask(access.token, JSON.stringify({ callId: 'toolu_2', command: 'ls' }));
    expect(await allowed.json()).toEqual({ decision: 'allow' });
  });

  it('refuses a closed run, a run without a gate, and a malformed call', async () => {
    const closed = lease(true);
    closed.close();
    expect((await ask(closed.access.token, JSON.stringify({ callId: 'a', command: 'ls' }))).status).toBe(401);
    expect((await ask('pbrelay-made-up', JSON.stringify({ callId: 'a', command: 'ls' }))).status).toBe(401);
    const gateless = lease(false);
    expect((await ask(gateless.access.token, JSON.stringify({ callId: 'a', command: 'ls' }))).status).toBe(404);
    const open = lease(true);
    const bad = await ask(open.access.token, JSON.stringify({ command: 42 }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'Patchbay relay: a gate call is {"callId", "command"}' });
    expect((await ask(open.access.token, 'x'.repeat(300_000))).status).toBe(413);
    expect(forwarded).toEqual([]);
  });
});
