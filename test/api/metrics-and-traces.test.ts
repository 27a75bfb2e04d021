import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf } from '../../src/core/events.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { startOtlpReceiver, type OtlpSpan } from '../fakes/otlp-receiver.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';

/** One metric's value from the Prometheus text, by its labels (a subset). */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/**
 * One end-to-end session (real worker, sandbox, git, `npm test` as its check, the scripted
 * verifier), then: /metrics shows its tokens, tool calls, check and verdict, and its trace reaches
 * a loopback OTLP collector with the run, turns, tool calls, check, verdict and push, each with the
 * session id.
 */
describe('metrics and traces of a session', () => {
  let remote: RemoteFixture;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let app: PatchbayFixture;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    await remote.pushCommit('test.js', "require('node:assert').strictEqual(require('./add.js')(2, 3), 5);\n", 'test');
    await remote.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
    receiver = await startOtlpReceiver();
    const model = createScriptedProvider({
      model: 'scripted-metrics',
      scenario: [
        { text: 'Looking at add.', toolCalls: [{ name: 'read_file', input: { path: 'add.js' } }] },
        {
          toolCalls: [
            { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => a + b;\n' } },
          ],
        },
        { toolCalls: [{ name: 'run_shell', input: { command: 'node test.js' } }] },
        { text: 'Fixed add.' },
      ],
    });
    app = await startTestPatchbay({ serve: true, model, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } });
  });
  afterAll(async () => {
    await app?.dispose();
    await receiver?.close();
    await remote?.cleanup();
  });

  it("scrapes the session's tokens, tool calls, check and verdict, and exports its trace", {
    timeout: 180_000,
  }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Fix add so 2 + 3 is 5',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const done = await waitForStatus(app, id, ['completed', 'failed'], 120_000);
    expect(done.status, done.error ?? '').toBe('completed');

    const res = await fetch(`${app.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const usage = (await app.store.events(id, { types: ['usage'] })).map((e) => e.event as EventOf<'usage'>);
    const byModel = (model: string, key: 'inputTokens' | 'outputTokens') =>
      usage.filter((u) => u.model === model).reduce((n, u) => n + u[key], 0);
    expect(byModel('scripted-metrics', 'inputTokens')).toBeGreaterThan(0);
    expect(sample(text, 'patchbay_model_tokens_total', { model: 'scripted-metrics', kind: 'input' })).toBe(
      byModel('scripted-metrics', 'inputTokens'),
    );
    expect(sample(text, 'patchbay_model_tokens_total', { model: 'scripted-metrics', kind: 'output' })).toBe(
      byModel('scripted-metrics', 'outputTokens'),
    );
    for (const tool of ['read_file', 'write_file', 'run_shell'])
      expect(sample(text, 'patchbay_tool_calls_total', { tool, outcome: 'ok' }), tool).toBe(1);
    expect(sample(text, 'patchbay_checks_total', { phase: 'check', name: 'test', outcome: 'passed' })).toBe(1);
    expect(sample(text, 'patchbay_verdicts_total', { outcome: 'passed' })).toBe(1);
    expect(sample(text, 'patchbay_run_duration_seconds_count', { outcome: 'completed' })).toBe(1);
    expect(sample(text, 'patchbay_sessions', { status: 'completed', surface: 'web' })).toBe(1);
    expect(sample(text, 'patchbay_queue_depth', {})).toBe(0);

    // The trace: exported within the batch delay.
    const names = [
      'session.run',
      'model.turn',
      'tool read_file',
      'tool write_file',
      'tool run_shell',
      'check test',
      'verify',
      'git.push',
    ];
    await waitFor(
      async () => names.every((n) => receiver.spans().some((s) => s.name === n)),
      "the run's spans at the collector",
      30_000,
    );
    const spans = receiver.spans();
    const run = spans.find((s) => s.name === 'session.run')!;
    const attr = (span: OtlpSpan, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;
    for (const span of spans) {
      expect(attr(span, 'patchbay.session_id'), span.name).toBe(id);
      expect(span.traceId, span.name).toBe(run.traceId);
      if (span !== run) expect(span.parentSpanId, span.name).toBe(run.spanId);
    }
    // One turn span per model call: the agent's and the verifier's.
    expect(spans.filter((s) => s.name === 'model.turn').map((s) => attr(s, 'gen_ai.request.model'))).toEqual(
      usage.map((u) => u.model),
    );
    expect(receiver.bodies[0]!.resourceSpans[0]!.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'patchbay' },
    });
    expect(receiver.refused).toEqual([]);
  });
});
