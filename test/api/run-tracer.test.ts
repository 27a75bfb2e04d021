import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunTracer, type RunTracer } from '../../src/api/run-tracer.ts';
import { startOtlpReceiver } from '../fakes/otlp-receiver.ts';
import { waitFor } from '../helpers/patchbay-fixture.ts';

/**
 * A delivery's trace: the inbound command that queued a session is the parent of the run it
 * queued, so a Slack mention, a GitHub comment or a Linear delegation and the work it caused read
 * as one trace at the collector.
 */
describe('the trace of a delivery and the run it queued', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let tracer: RunTracer;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracer = await startRunTracer({ endpoint: receiver.url, log: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('makes the run a child of the inbound command, both with the session id', { timeout: 30_000 }, async () => {
    const handle = tracer.traceInbound(async () => ({ kind: 'started', session: { id: 'sess-1', status: 'queued', title: 'Fix the parser' } }));
    const outcome = await handle({ kind: 'start', thread: { source: 'slack', teamId: 'T1', channel: 'C1', threadTs: '1.2' }, actor: { source: 'slack', id: 'U1', name: 'Ada' }, text: 'fix the parser', repo: 'https://github.com/acme/widgets', deliveryId: 'Ev01' });
    expect(outcome.kind).toBe('started');
    tracer.onStatus('sess-1', 'queued', 'running');
    tracer.onStatus('sess-1', 'running', 'completed');
    await tracer.shutdown();
    await waitFor(async () => receiver.spans().length >= 2, 'the spans at the collector');
    const inbound = receiver.spans().find((s) => s.name === 'inbound start')!;
    const run = receiver.spans().find((s) => s.name === 'session.run')!;
    const attr = (key: string, span = inbound) => span.attributes.find((a) => a.key === key)?.value.stringValue;
    expect([attr('patchbay.session_id'), attr('patchbay.surface'), attr('patchbay.delivery_id'), attr('patchbay.outcome')]).toEqual(['sess-1', 'slack', 'Ev01', 'started']);
    expect(run.traceId).toBe(inbound.traceId);
    expect(run.parentSpanId).toBe(inbound.spanId);
    expect(attr('patchbay.session_id', run)).toBe('sess-1');
    expect(receiver.refused).toEqual([]);
  });
});
