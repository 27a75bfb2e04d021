import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryInterpreter } from '../../src/core/delivery-interpreter.ts';
import type { InboundPipeline } from '../../src/sessions/inbound/inbound-pipeline.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startTestPipeline } from '../helpers/test-pipeline.ts';

/**
 * The pipeline against real PostgreSQL and pg-boss: deliveries of one order key are worked in the
 * order they were stored, even when the first one needs a retry; other keys do not wait.
 */
describe('inbound pipeline ordering', () => {
  let pipeline: InboundPipeline;
  const attempts: string[] = [];

  // Our own port, driven by the pipeline: the first delivery of key k fails once, as a surface
  // whose service answered 502 would.
  const surface: DeliveryInterpreter = {
    source: 'github',
    async interpret(delivery) {
      attempts.push(`${delivery.body}#${delivery.attempt}`);
      if (delivery.body === 'k-first' && delivery.attempt === 1) throw new Error('the service answered 502');
      return { kind: 'ignore', reason: 'worked' };
    },
    async tellFailure() {},
  };

  let fixture: Awaited<ReturnType<typeof startTestPipeline>> | undefined;
  beforeAll(async () => {
    fixture = await startTestPipeline(surface, {
      pollingIntervalSeconds: 0.5,
      retry: { retries: 2, delaySeconds: 1, maxDelaySeconds: 1 },
    });
    pipeline = fixture.pipeline;
  }, 60_000);
  afterAll(() => fixture?.dispose());

  it('holds a delivery back while an earlier one of its key is retried, and lets other keys through', async () => {
    const delivery = (body: string, orderKey: string) => ({
      source: 'github',
      dedupeKey: body,
      kind: 'event',
      body,
      orderKey,
    });
    expect(await pipeline.accept(delivery('k-first', 'k'))).toBe('accepted');
    expect(await pipeline.accept(delivery('k-second', 'k'))).toBe('accepted');
    expect(await pipeline.accept(delivery('other', 'j'))).toBe('accepted');
    await waitFor(
      async () => (await pipeline.list()).every((d) => d.status === 'ignored'),
      'every delivery worked',
      30_000,
    );
    const ofK = attempts.filter((a) => a.startsWith('k-'));
    expect(ofK).toEqual(['k-first#1', 'k-first#2', 'k-second#1']);
    // The other key did not queue behind k's retry.
    expect(attempts.indexOf('other#1')).toBeLessThan(attempts.indexOf('k-first#2'));
    const stored = await pipeline.list();
    expect(stored.map((d) => [d.dedupeKey, d.attempts])).toEqual([
      ['other', 1],
      ['k-second', 1],
      ['k-first', 2],
    ]);
  }, 60_000);
});
