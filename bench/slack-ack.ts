/**
 * Slack event ack latency and throughput: signed app_mention events POSTed over loopback to the
 * Fastify route with Patchbay's Bolt receiver (signature check, Bolt middleware up to its ack,
 * event_id dedupe and the inbound listener after it), next to a bare Fastify handler that only
 * verifies the signature, measured in the same run. The session service is an in-memory stand-in
 * (the real one writes to PostgreSQL after the ack, off the measured path); the Web API is the
 * loopback fake. Run: npm exec -- node bench/slack-ack.ts
 */
import Fastify from 'fastify';
import pino from 'pino';
import { WebClient } from '@slack/web-api';
import { createSlackApp } from '../integrations/slack/slack-app.ts';
import { createActorDirectory } from '../integrations/slack/slack-actors.ts';
import { createSlackInbound } from '../integrations/slack/slack-inbound.ts';
import { createFastifyReceiver } from '../integrations/slack/slack-receiver.ts';
import { verifySlackSignature } from '../integrations/slack/slack-signature.ts';
import type { SlackStore } from '../integrations/slack/slack-store.ts';
import { appMention, envelope, signBody } from '../test/fakes/fake-slack-events.ts';
import { startFakeSlackApi } from '../test/fakes/fake-slack-api.ts';

const REQUESTS = 2_000;
const CONCURRENCY = 16;
const WARMUP = 200;
const SECRET = 'bench-signing-secret';
const BOT_TOKEN = 'xoxb-bench';
const log = pino({ level: 'silent' });

const slack = await startFakeSlackApi({ botToken: BOT_TOKEN, users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice', email: 'alice@example.com' }] });
const web = new WebClient(BOT_TOKEN, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
const seen = new Set<string>();
let started = 0;
const context = {
  async handle() {
    started += 1;
    return { kind: 'duplicate' as const };
  },
  async findSession() {
    return undefined;
  },
  async recordDelivery(source: string, id: string) {
    const key = `${source}:${id}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  },
};
const store = { pending: async () => undefined } as unknown as SlackStore;
const inbound = createSlackInbound({ context, store, web, actors: createActorDirectory({ web, log }), log, botUserId: slack.bot.userId, repoUrlFor: (o, r) => `https://github.com/${o}/${r}` });

const bolt = Fastify({ loggerInstance: log });
const receiver = createFastifyReceiver({ signingSecret: SECRET, log });
createSlackApp({
  botToken: BOT_TOKEN,
  botId: slack.bot.botId,
  botUserId: slack.bot.userId,
  apiUrl: slack.apiUrl,
  retryConfig: { retries: 0 },
  receiver,
  inbound,
  recordDelivery: (id) => context.recordDelivery('slack', id),
  log,
});
await bolt.register((scope) => receiver.routes(scope));

const bare = Fastify({ loggerInstance: log });
await bare.register(async (scope) => {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  scope.post('/slack/events', async (request, reply) => {
    const check = verifySlackSignature({
      signingSecret: SECRET,
      timestamp: request.headers['x-slack-request-timestamp'] as string | undefined,
      signature: request.headers['x-slack-signature'] as string | undefined,
      rawBody: request.body as string,
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    return reply.code(check.ok ? 200 : 401).send();
  });
});

const boltUrl = await bolt.listen({ port: 0, host: '127.0.0.1' });
const bareUrl = await bare.listen({ port: 0, host: '127.0.0.1' });

function signedEvent() {
  const event = appMention({ user: 'U0ALICE01', text: 'fix the docs in <https://github.com/acme/widgets>' });
  return signBody(SECRET, JSON.stringify(envelope(event)));
}

async function load(url: string, count: number): Promise<{ latencies: number[]; seconds: number }> {
  const requests = Array.from({ length: count }, signedEvent);
  const latencies: number[] = [];
  let next = 0;
  const begin = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests.length) {
        const request = requests[next++]!;
        const t0 = performance.now();
        const res = await fetch(`${url}/slack/events`, { method: 'POST', headers: request.headers, body: request.body });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`status ${res.status}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - begin) / 1000 };
}

function summary(name: string, run: { latencies: number[]; seconds: number }) {
  const sorted = [...run.latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { name, p50: at(0.5), p99: at(0.99), rps: run.latencies.length / run.seconds };
}

await load(bareUrl, WARMUP);
await load(boltUrl, WARMUP);
const bareRun = summary('bare signature check', await load(bareUrl, REQUESTS));
const boltRun = summary('Patchbay Slack route (Bolt)', await load(boltUrl, REQUESTS));
await new Promise((r) => setTimeout(r, 500));

console.log(`${REQUESTS} signed app_mention events per handler, ${CONCURRENCY} concurrent, loopback`);
for (const r of [bareRun, boltRun]) {
  console.log(`${r.name.padEnd(30)} p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(6)} ms   ${r.rps.toFixed(0).padStart(6)} req/s`);
}
console.log(`ratio (Slack route / bare): p50 ×${(boltRun.p50 / bareRun.p50).toFixed(2)}, p99 ×${(boltRun.p99 / bareRun.p99).toFixed(2)}, throughput ×${(boltRun.rps / bareRun.rps).toFixed(2)}`);
console.log(`listener work after the ack: ${started} sessions handed over, ${slack.reactions.length} 👀 reactions posted`);

await bolt.close();
await bare.close();
await slack.close();
