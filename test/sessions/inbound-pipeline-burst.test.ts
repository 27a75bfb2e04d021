import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryInterpreter } from '../../src/core/delivery-interpreter.ts';
import type { InboundPipeline } from '../../src/sessions/inbound/inbound-pipeline.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startTestPipeline } from '../helpers/test-pipeline.ts';

/**
 * A burst of deliveries (a busy Slack channel, a GitHub redelivery of a day's events) against real
 * PostgreSQL and pg-boss, with polling set far beyond the test's length: every delivery must be
 * worked on the queue's wake-ups alone. A pipeline whose workers take a few jobs per wake-up and
 * then wait for their next poll leaves most of the burst waiting, a poll interval per few deliveries.
 */
describe('inbound pipeline under a burst', () => {
  let pipeline: InboundPipeline;
  const worked = new Map<string, number>();

  const surface: DeliveryInterpreter = {
    source: 'github',
    async interpret(delivery) {
      worked.set(delivery.body, (worked.get(delivery.body) ?? 0) + 1);
      return { kind: 'ignore', reason: 'worked' };
    },
    async tellFailure() {},
  };

  let fixture: Awaited<ReturnType<typeof startTestPipeline>> | undefined;
  beforeAll(async () => {
    fixture = await startTestPipeline(surface, { pollingIntervalSeconds: 300 });
    pipeline = fixture.pipeline;
  }, 60_000);
  afterAll(() => fixture?.dispose());

  it('works every delivery of a burst without waiting for a poll, each once', async () => {
    const bodies = Array.from({ length: 120 }, (_, i) => `delivery-${i}`);
    // Arriving together, as concurrent webhook requests do, and some in a second wave while the first is worked.
    const first = await Promise.all(
      bodies
        .slice(0, 80)
        .map((body, i) =>
          pipeline.accept({ source: 'github', dedupeKey: body, kind: 'event', body, orderKey: `thread-${i % 10}` }),
        ),
    );
    const second = await Promise.all(
      bodies.slice(80).map((body) => pipeline.accept({ source: 'github', dedupeKey: body, kind: 'event', body })),
    );
    expect([...first, ...second].every((stored) => stored === 'accepted')).toBe(true);
    await waitFor(
      async () => (await pipeline.list({ limit: 500 })).every((d) => d.status === 'ignored'),
      'every delivery of the burst worked',
      30_000,
    );
    expect([...worked.keys()].sort()).toEqual([...bodies].sort());
    expect([...worked.values()].every((times) => times === 1)).toBe(true);
  }, 60_000);
});
