/**
 * Linear's first-activity latency: from the AgentSessionEvent `created` webhook POST to the first
 * agent activity (the acknowledging thought) reaching the loopback Linear fake, over 200 events,
 * p50/p99, through the whole Patchbay (signature check, durable delivery row, worker, @linear/sdk).
 * Beside it, in the same run: a bare Fastify handler that only checks the signature with the SDK's
 * LinearWebhookClient and answers 200 (the floor any receiver pays), and Patchbay's own ack time.
 * Linear asks for the answer within 5 s and the first activity within 10 s.
 * Run: npm exec -- node bench/linear-first-activity.ts [events]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import Fastify from 'fastify';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { startPatchbay } from '../src/main.ts';
import { createScriptedProvider } from '../src/models/scripted-provider.ts';
import { buildIntegrations } from '../src/wire-integrations.ts';
import { startFakeLinear } from '../test/fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook } from '../test/fakes/linear/fake-linear-webhooks.ts';

const EVENTS = Number(process.argv[2] ?? 200);
const WARMUP = 10;
const SECRET = 'lin_wh_bench-signing-secret';
const ada = { id: 'u-ada', name: 'Ada', email: 'ada@acme.test' };

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const fmt = (ms: number) => `${ms.toFixed(1).padStart(7)} ms`;

const work = await mkdtemp(join(tmpdir(), 'bench-linear-'));
const linear = await startFakeLinear();
linear.addTeam({
  id: 't-eng',
  key: 'ENG',
  name: 'Engineering',
  states: [
    { id: 's-todo', name: 'Todo', type: 'unstarted', position: 0 },
    { id: 's-doing', name: 'In Progress', type: 'started', position: 1 },
  ],
});
const payloadFor = (n: number) => {
  const issue = linear.addIssue({
    id: `issue-${n}`,
    identifier: `ENG-${n}`,
    title: `Fix bug ${n}`,
    description: 'Repository: https://github.com/acme/shop',
    teamId: 't-eng',
    stateId: 's-todo',
  });
  return agentSessionCreated(linear, { agentSessionId: `as-${n}`, issue, creator: ada });
};

// Baseline: only the signature and timestamp check, on the same machine, same payloads.
const bare = Fastify({ logger: false });
const verifier = new LinearWebhookClient(SECRET);
bare.removeAllContentTypeParsers();
bare.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
bare.post('/linear/webhooks', async (req, reply) => {
  try {
    verifier.parseData(req.body as Buffer, String(req.headers['linear-signature']));
  } catch {
    return reply.code(401).send();
  }
  return reply.code(200).send({ ok: true });
});
const bareUrl = `${await bare.listen({ port: 0, host: '127.0.0.1' })}/linear/webhooks`;

const config = loadConfig({
  DATA_DIR: join(work, 'patchbay'),
  PORT: '0',
  LOG_LEVEL: 'silent',
  LINEAR_WEBHOOK_SECRET: SECRET,
  LINEAR_ACCESS_TOKEN: linear.accessToken,
  LINEAR_API_URL: linear.apiUrl,
});
// No worker: the runs the sessions would start are not what this measures.
const app = await startPatchbay(config, {
  log: pino({ level: process.env.BENCH_LOG ?? 'silent' }),
  serve: true,
  work: false,
  model: createScriptedProvider({ scenario: [{ text: 'unused' }] }),
  integrations: (context) => buildIntegrations(config, context),
});
try {
  const url = `${app.url}/linear/webhooks`;
  const bareMs: number[] = [];
  const ackMs: number[] = [];
  const firstMs: number[] = [];
  for (let n = 0; n < WARMUP + EVENTS; n++) {
    const payload = payloadFor(n);
    let begin = performance.now();
    const base = await sendLinearWebhook(bareUrl, SECRET, payload);
    if (base.status !== 200) throw new Error(`bare handler answered ${base.status}`);
    const bareTook = performance.now() - begin;

    begin = performance.now();
    const sent = await sendLinearWebhook(url, SECRET, payload);
    const ackTook = performance.now() - begin;
    if (sent.status !== 200) throw new Error(`Patchbay answered ${sent.status}`);
    await linear.waitFor(() => linear.activitiesOf(`as-${n}`).length > 0, `the first activity of as-${n}`);
    const firstTook = performance.now() - begin;
    if (n >= WARMUP) {
      bareMs.push(bareTook);
      ackMs.push(ackTook);
      firstMs.push(firstTook);
    }
  }
  if (linear.refused.length) throw new Error(`the fake refused calls: ${JSON.stringify(linear.refused.slice(0, 3))}`);
  for (const list of [bareMs, ackMs, firstMs]) list.sort((a, b) => a - b);
  const line = (label: string, list: number[]) =>
    console.log(
      `${label.padEnd(44)} p50 ${fmt(percentile(list, 50))}   p99 ${fmt(percentile(list, 99))}   ${(percentile(list, 50) / percentile(bareMs, 50)).toFixed(1)}x the bare p50`,
    );
  console.log(`${EVENTS} AgentSessionEvent created webhooks over loopback, one at a time (after ${WARMUP} warm-up)`);
  line('bare signature-check handler (baseline)', bareMs);
  line('Patchbay ack (verify, store, answer)', ackMs);
  line('Patchbay POST to first activity at Linear', firstMs);
  console.log(
    `slowest first activity ${fmt(firstMs.at(-1)!)} (Linear's limit: 10 s); slowest ack ${fmt(ackMs.at(-1)!)} (limit: 5 s)`,
  );
} finally {
  await app.close();
  await bare.close();
  await linear.close();
  await rm(work, { recursive: true, force: true });
}
