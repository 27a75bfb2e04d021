import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeStore } from '../../src/api/observed-store.ts';
import { startRunTracer, traceRunQueue, type RunTracer } from '../../src/start/run-tracer.ts';
import { createRunQueue, type RunJob, type RunQueue } from '../../src/sessions/worker/run-queue.ts';
import { createSessionService } from '../../src/sessions/inbound/session-service.ts';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { startOtlpReceiver, type OtlpSpan } from '../fakes/otlp-receiver.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const commit = 'c0ffee'.padEnd(40, '0');

/**
 * A delivery's trace across the durable queue: the inbound command (a Slack mention here) stores
 * its trace context in the run's pg-boss job, and the run of that job, taken by another queue
 * client as a worker process does, is its child: delivery → run → turn → tool → check → verdict →
 * push in one trace, every span with the session id. Nothing but the job connects the two sides:
 * the tracer keeps no delivery in memory for a run.
 */
describe('the trace of a delivery and the run it queued, across the queue', () => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let tracer: RunTracer;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const queues: RunQueue[] = [];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracer = await startRunTracer({ endpoint: receiver.url, log: pino({ level: 'silent' }) });
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const queue of queues) await queue.stop();
    await database?.close();
    await receiver?.close();
  });

  it('makes the run on the worker side a child of the delivery, all in one trace with the session id', {
    timeout: 60_000,
  }, async () => {
    const log = pino({ level: 'silent' });
    const store = observeStore(createSessionStore(database.db), [tracer]);
    // The API side: the traced handler and a queue that stores the trace context in each job.
    const apiQueue = traceRunQueue(
      await createRunQueue({ url: database.url, log, pollingIntervalSeconds: 0.5 }),
      tracer,
    );
    queues.push(apiQueue);
    const handle = tracer.traceInbound(createSessionService({ store, queue: apiQueue, log }).handle);
    const outcome = await handle({
      kind: 'start',
      thread: { source: 'slack', teamId: 'T1', channel: 'C1', threadTs: '1.2' },
      actor: { source: 'slack', id: 'U1', name: 'Ada' },
      text: 'fix the parser',
      repo: 'https://github.com/acme/widgets',
      dedupeKey: 'Ev01',
    });
    if (outcome.kind !== 'started') throw new Error(outcome.kind);
    const id = outcome.session.id;
    const [job] = await apiQueue.boss.findJobs<RunJob>('run-session');
    expect(job?.data).toEqual({
      sessionId: id,
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/),
    });

    // The worker side: its own queue client takes the job and runs the session as the worker does.
    const workerQueue = traceRunQueue(
      await createRunQueue({ url: database.url, log, pollingIntervalSeconds: 0.5 }),
      tracer,
    );
    queues.push(workerQueue);
    const ran = new Promise<void>((resolve, reject) => {
      void workerQueue.work(async ({ sessionId }) => {
        try {
          await store.transition(sessionId, 'start');
          await store.commitStep(sessionId, {
            events: [
              {
                event: {
                  type: 'usage',
                  turn: 0,
                  model: 'claude-sonnet-4-6',
                  inputTokens: 10,
                  outputTokens: 5,
                  cacheReadTokens: 0,
                  cacheWriteTokens: 0,
                },
              },
              {
                event: {
                  type: 'tool-end',
                  callId: 'c1',
                  name: 'run_shell',
                  isError: false,
                  output: 'ok',
                  durationMs: 3,
                },
              },
              {
                event: {
                  type: 'check-finished',
                  phase: 'check',
                  name: 'test',
                  command: 'npm test',
                  outcome: 'passed',
                  exitCode: 0,
                  durationMs: 4,
                  commit,
                  logHead: '',
                  logTail: '',
                },
              },
              { event: { type: 'verification-finished', outcome: 'passed', commit, attempt: 1, summary: 'fixed' } },
              { event: { type: 'branch-pushed', branch: 'patchbay/fix', commit, remote: 'origin' } },
            ],
          });
          await store.transition(sessionId, 'finish');
          resolve();
        } catch (error) {
          reject(error);
        }
      });
    });
    await ran;
    await tracer.shutdown();

    const names = ['inbound start', 'session.run', 'model.turn', 'tool run_shell', 'check test', 'verify', 'git.push'];
    await waitFor(
      async () => names.every((n) => receiver.spans().some((s) => s.name === n)),
      'the spans at the collector',
    );
    const spans = receiver.spans();
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const attr = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;
    const inbound = byName('inbound start');
    const run = byName('session.run');
    expect([
      attr(inbound, 'patchbay.surface'),
      attr(inbound, 'patchbay.dedupe_key'),
      attr(inbound, 'patchbay.outcome'),
    ]).toEqual(['slack', 'Ev01', 'started']);
    expect(job!.data.traceparent).toBe(`00-${inbound.traceId}-${inbound.spanId}-01`);
    expect(run.parentSpanId).toBe(inbound.spanId);
    for (const span of spans) {
      expect(span.traceId, span.name).toBe(inbound.traceId);
      expect(attr(span, 'patchbay.session_id'), span.name).toBe(id);
      if (span !== inbound && span !== run) expect(span.parentSpanId, span.name).toBe(run.spanId);
    }
    expect(receiver.refused).toEqual([]);
  });
});
