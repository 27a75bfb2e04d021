import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpSpan } from '../fakes/otlp-receiver.ts';
import { appMention, envelope } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { assistantTurns, startSlackFixture, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

/**
 * One trace per delivery, as a user runs it: a signed Slack mention is stored, worked from the
 * inbound queue, and the run it queues is taken from the run queue; the run's job carries the
 * delivery's trace context, so the loopback collector gets delivery → run → turns → tools → check →
 * verdict → push as one trace, every span with the session id.
 */
describe('the trace of a Slack mention, from the delivery to the push', () => {
  let f: SlackFixture;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    f = await startSlackFixture({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
    await f.remote.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    await f.remote.pushCommit('test.js', "require('node:assert').strictEqual(require('./add.js')(2, 3), 5);\n", 'test');
    await f.remote.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
  });
  afterAll(async () => {
    await f?.dispose();
    await receiver?.close();
  });

  it('exports one trace from the mention to the push, with the session id on every span', {
    timeout: 180_000,
  }, async () => {
    f.setScenario((messages) => {
      switch (assistantTurns(messages)) {
        case 0:
          return {
            text: 'Fixing add.',
            toolCalls: [
              { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => a + b;\n' } },
            ],
          };
        case 1:
          return { toolCalls: [{ name: 'run_shell', input: { command: 'node test.js' } }] };
        default:
          return { text: 'Fixed add.' };
      }
    });
    const mention = appMention({ user: 'U0ALICE01', text: 'fix add in <https://github.com/acme/calc>' });
    expect((await f.postEvent(envelope(mention, 'EvTRACE0001'))).status).toBe(200);
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    const done = await waitForStatus(f.app, session.id, ['completed', 'failed'], 120_000);
    expect(done.status, done.error ?? '').toBe('completed');

    const names = [
      'inbound start',
      'session.run',
      'model.turn',
      'tool write_file',
      'tool run_shell',
      'check test',
      'verify',
      'git.push',
    ];
    await waitFor(
      async () => names.every((n) => receiver.spans().some((s) => s.name === n)),
      "the trace's spans at the collector",
      30_000,
    );
    const spans = receiver.spans().filter((s) => s.name.startsWith('inbound ') || names.includes(s.name));
    const attr = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;
    const inbound = spans.find((s) => s.name === 'inbound start')!;
    const run = spans.find((s) => s.name === 'session.run')!;
    expect(attr(inbound, 'patchbay.surface')).toBe('slack');
    expect(attr(inbound, 'patchbay.dedupe_key')).toMatch(/\S/);
    expect(run.parentSpanId).toBe(inbound.spanId);
    for (const span of spans) {
      expect(span.traceId, span.name).toBe(inbound.traceId);
      expect(attr(span, 'patchbay.session_id'), span.name).toBe(session.id);
      if (span !== inbound && span !== run) expect(span.parentSpanId, span.name).toBe(run.spanId);
    }
    expect(receiver.refused).toEqual([]);
  });
});
