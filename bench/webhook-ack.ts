/**
 * Webhook ack latency and throughput, Slack, GitHub and Linear, each next to two baselines at the same
 * concurrency, in the same run: the durable floor (a Fastify handler that checks the signature and
 * commits one insert of the raw body into the same PostgreSQL before it answers: what any ack that
 * survives a crash must cost; the goal is measured against it) and a bare handler that only checks
 * the signature (no I/O at all; shown for scale). The Patchbay routes are the
 * real ones on the real inbound pipeline: verify, one insert into PostgreSQL (unique by meaning),
 * ack; the pg-boss job is sent after the ack. No surface is attached, so the stored deliveries are
 * worked as "ignored" by this process's pipeline workers, as `patchbay serve` and `patchbay api`
 * work theirs (begin, finish, the queue's fetch and completion: more database work per delivery
 * than its ack). The workers let a burst's acks go first, for up to its first second (see
 * ArrivalClock in src/sessions/delivery-inbox.ts); after each burst the bench waits until every
 * delivery of it is worked, reports how long that took, and only then measures the next half, so
 * no burst's work lands in another's figures.
 *
 * Client, servers, pipeline and (embedded) PostgreSQL share this machine; the client runs in this
 * process, as in the baseline. Payloads are spread over threads and issues as real traffic is.
 * Each side also shows its CPU per request, which a loaded machine disturbs less than latency:
 * this process's (servers, pipeline and the sending thread alike) and PostgreSQL's (on Linux, from
 * /proc, for the embedded server only: with DATABASE_URL it reads as NaN).
 * Uses DATABASE_URL when set (a scratch database: the bench leaves its deliveries there),
 * otherwise an embedded PostgreSQL in a temporary directory.
 * Run: npm exec -- node bench/webhook-ack.ts
 *   BENCH_REQUESTS=20000 per side and surface, in BENCH_ROUNDS=20 rounds; BENCH_SURFACES=slack,github,linear
 *   to measure only some.
 * The p99 of one round is set by the few stalls of a shared machine that hold up all the requests in
 * flight at once, on whichever side they fall: the goal is read from the p99 of every round together,
 * and the spread of the rounds' own ratios is printed beside it, so a reader sees how much one run
 * can move it.
 */
import { createHmac, randomInt, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { loadavg, tmpdir } from 'node:os';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { CompiledQuery, sql } from 'kysely';
import pino from 'pino';
import { openDatabase } from '../db/database.ts';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { githubRoutes, signatureVerifier } from '../integrations/github/github-routes.ts';
import { linearRoutes } from '../integrations/linear/linear-routes.ts';
import type { LinearStore } from '../integrations/linear/linear-store.ts';
import type { GitHubClient } from '../integrations/github/github-client.ts';
import type { GitHubStore } from '../integrations/github/github-store.ts';
import { slackRoutes } from '../integrations/slack/slack-routes.ts';
import { verifySlackSignature } from '../integrations/slack/slack-signature.ts';
import { createInboundPipeline } from '../src/sessions/inbound/inbound-pipeline.ts';
import { createRunQueue } from '../src/sessions/worker/run-queue.ts';
import { postgresCpu } from './_postgres-cpu.ts';
import { issueCommentEvent } from '../test/fakes/fake-github-webhooks.ts';
import { appMention, envelope, signBody } from '../test/fakes/fake-slack-events.ts';
import { startFakeLinear } from '../test/fakes/linear/fake-linear.ts';
import { agentSessionCreated } from '../test/fakes/linear/fake-linear-webhooks.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const CONCURRENCY = 16;
const WARMUP = 200;
const SLACK_SECRET = 'bench-signing-secret';
const GITHUB_SECRET = 'bench-webhook-secret';
const verifyGitHub = signatureVerifier(GITHUB_SECRET);
const LINEAR_SECRET = 'lin_wh_bench-signing-secret';
const log = pino({ level: 'silent' });
const pipelineLog = pino({ level: process.env.LOG_LEVEL ?? 'silent' });

const dir = await mkdtemp(join(tmpdir(), 'patchbay-bench-ack-'));
const database = await openDatabase({
  ...(process.env.DATABASE_URL && { url: process.env.DATABASE_URL }),
  dataDir: dir,
  log,
});
const queue = await createRunQueue({ url: database.url, log });
const inbox = createInboundPipeline({
  db: database.db,
  boss: queue.boss,
  service: { handle: async () => ({ kind: 'no-session' }) },
  log: pipelineLog,
});
await inbox.start([]);
// Only for building payloads that fit Linear's schema (its teams and issues); nothing calls it.
const linear = await startFakeLinear();
linear.addTeam({
  id: 'team-eng',
  key: 'ENG',
  name: 'Engineering',
  states: [{ id: 'st-todo', name: 'Todo', type: 'unstarted', position: 0 }],
});
const linearIssue = linear.addIssue({
  id: 'issue-eng-1',
  identifier: 'ENG-1',
  title: 'Fix the docs',
  description: 'In https://github.com/acme/widgets',
  teamId: 'team-eng',
  stateId: 'st-todo',
});
const linearVerifier = new LinearWebhookClient(LINEAR_SECRET);

type Request = { headers: Record<string, string>; body: string };
type Headers = Record<string, string | string[] | undefined>;
const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

async function server(
  register: (app: FastifyInstance) => Promise<void>,
): Promise<{ url: string; close: () => Promise<void> }> {
  const app = Fastify({ loggerInstance: log });
  await app.register(register);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, close: () => app.close() };
}

/** The baseline: a route in its own scope that reads the raw body and checks the signature, nothing else. */
function bare(path: string, check: (headers: Headers, body: Buffer) => boolean | Promise<boolean>) {
  return async (scope: FastifyInstance) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post(path, async (request, reply) =>
      reply.code((await check(request.headers, request.body as Buffer)) ? 200 : 401).send(),
    );
  };
}

// The durable floor's table: the raw body and nothing else, in the bench's scratch database.
await sql`create table if not exists bench_durable_floor (id bigserial primary key, body text not null)`.execute(
  database.db,
);

/** The durable floor: checks the signature, then commits one insert of the raw body, then answers. */
function durable(path: string, check: (headers: Headers, body: Buffer) => boolean | Promise<boolean>) {
  return async (scope: FastifyInstance) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
    scope.post(path, async (request, reply) => {
      if (!(await check(request.headers, request.body as Buffer))) return reply.code(401).send();
      await database.db.executeQuery(
        CompiledQuery.raw('insert into bench_durable_floor (body) values ($1)', [
          (request.body as Buffer).toString('utf8'),
        ]),
      );
      return reply.code(200).send();
    });
  };
}

const surfaces = {
  slack: {
    path: '/slack/events',
    patchbay: slackRoutes({ signingSecret: SLACK_SECRET, inbox, log }),
    check: (h: Headers, body: Buffer) =>
      verifySlackSignature({
        signingSecret: SLACK_SECRET,
        timestamp: header(h['x-slack-request-timestamp']),
        signature: header(h['x-slack-signature']),
        rawBody: body.toString('utf8'),
        nowSeconds: Math.floor(Date.now() / 1000),
      }).ok,
    request(): Request {
      // A fresh ts each time: its own thread, and unique against deliveries of earlier runs.
      const ts = `${Math.floor(Date.now() / 1000)}.${randomInt(1e6).toString().padStart(6, '0')}${randomInt(1e6)}`;
      const event = appMention({ user: 'U0ALICE01', text: 'fix the docs in <https://github.com/acme/widgets>', ts });
      return signBody(SLACK_SECRET, JSON.stringify(envelope(event)));
    },
  },
  github: {
    path: '/github/webhooks',
    patchbay: githubRoutes({
      webhookSecret: GITHUB_SECRET,
      inbox,
      store: {} as GitHubStore,
      client: {} as GitHubClient,
      log,
    }),
    check: (h: Headers, body: Buffer) => verifyGitHub(body, header(h['x-hub-signature-256'])),
    request(): Request {
      const id = Math.floor(Math.random() * 2 ** 40);
      const user = { login: 'alice', id: 5, type: 'User' };
      const number = 1 + randomInt(5_000);
      const payload = issueCommentEvent(
        { owner: 'acme', repo: 'widgets', installationId: 1 },
        { number, title: 'Docs', body: 'Fix them.', commentId: id, user, comment: '@patchbay fix the docs' },
      );
      const body = JSON.stringify(payload);
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issue_comment',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': `sha256=${createHmac('sha256', GITHUB_SECRET).update(body).digest('hex')}`,
        },
      };
    },
  },
  linear: {
    path: '/linear/webhooks',
    patchbay: linearRoutes({ webhookSecret: LINEAR_SECRET, store: {} as LinearStore, inbox, log }),
    check: (h: Headers, body: Buffer) => {
      try {
        linearVerifier.parseData(body, header(h['linear-signature']) ?? '');
        return true;
      } catch {
        return false;
      }
    },
    request(): Request {
      const payload = agentSessionCreated(linear, {
        agentSessionId: randomUUID(),
        issue: linearIssue,
        creator: { id: 'u-ada', name: 'Ada', email: 'ada@acme.test' },
      });
      const body = JSON.stringify({ ...payload, webhookTimestamp: Date.now() });
      return {
        body,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'linear-delivery': randomUUID(),
          'linear-event': 'AgentSessionEvent',
          'linear-signature': createHmac('sha256', LINEAR_SECRET).update(body).digest('hex'),
        },
      };
    },
  },
};

/**
 * Sends the requests from a worker thread, CONCURRENCY at a time: the sender has its own event loop,
 * as Slack, GitHub and Linear do, instead of taking turns with the server it measures. One sender
 * for the whole run, so both sides meet the same warmed-up client.
 */
const sender = new Worker(new URL('./_webhook-sender.ts', import.meta.url));
sender.unref();
type Run = { latencies: number[]; seconds: number; nodeCpuMs: number; postgresCpuMs: number };
const backend = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db);
// A DATABASE_URL server's pids are not this machine's.
const postgresCpuMs = (database.exclusive && postgresCpu(backend.rows[0]!.pid)) || (() => Number.NaN);
async function load(url: string, requests: Request[]): Promise<Run> {
  const node = process.cpuUsage();
  const postgres = postgresCpuMs();
  sender.postMessage({ url, requests, concurrency: CONCURRENCY });
  const [result] = (await once(sender, 'message')) as [{ latencies: number[]; seconds: number } | { error: string }];
  if ('error' in result) throw new Error(result.error);
  const { user, system } = process.cpuUsage(node);
  return { ...result, nodeCpuMs: (user + system) / 1000, postgresCpuMs: postgresCpuMs() - postgres };
}

function summary(run: Run) {
  const sorted = [...run.latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const n = run.latencies.length;
  return {
    p50: at(0.5),
    p99: at(0.99),
    rps: n / run.seconds,
    nodeCpu: run.nodeCpuMs / n,
    postgresCpu: run.postgresCpuMs / n,
  };
}

/** Waits until every stored delivery has been worked (at most a minute); returns how long that took. */
async function drained(): Promise<number> {
  const begin = performance.now();
  while (performance.now() - begin < 60_000) {
    const pending = await database.db
      .selectFrom('inbound_deliveries')
      .select(({ fn }) => fn.countAll<string>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    if (Number(pending.n) === 0) return performance.now() - begin;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Number.POSITIVE_INFINITY;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const rows: string[] = [];
const loadBefore = loadavg()[0]!;
try {
  const only = process.env.BENCH_SURFACES?.split(',');
  for (const [name, surface] of Object.entries(surfaces).filter(([name]) => !only || only.includes(name))) {
    const base = await server(bare(surface.path, surface.check));
    const floor = await server(durable(surface.path, surface.check));
    const real = await server(surface.patchbay);
    const make = (n: number) => Array.from({ length: n }, () => surface.request());
    for (const side of [base, floor, real]) await load(`${side.url}${surface.path}`, make(WARMUP));
    await drained();
    // Interleaved rounds, so a slow moment of a shared machine hits every side alike.
    const bareRuns: Awaited<ReturnType<typeof load>>[] = [];
    const floorRuns: Awaited<ReturnType<typeof load>>[] = [];
    const realRuns: Awaited<ReturnType<typeof load>>[] = [];
    const drains: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      bareRuns.push(await load(`${base.url}${surface.path}`, make(REQUESTS / ROUNDS)));
      floorRuns.push(await load(`${floor.url}${surface.path}`, make(REQUESTS / ROUNDS)));
      realRuns.push(await load(`${real.url}${surface.path}`, make(REQUESTS / ROUNDS)));
      drains.push(await drained());
    }
    const merge = (runs: typeof bareRuns): Run => ({
      latencies: runs.flatMap((r) => r.latencies),
      seconds: runs.reduce((sum, r) => sum + r.seconds, 0),
      nodeCpuMs: runs.reduce((sum, r) => sum + r.nodeCpuMs, 0),
      postgresCpuMs: runs.reduce((sum, r) => sum + r.postgresCpuMs, 0),
    });
    const bareRun = summary(merge(bareRuns));
    const floorRun = summary(merge(floorRuns));
    const realRun = summary(merge(realRuns));
    const fmt = (label: string, r: ReturnType<typeof summary>) =>
      `${label.padEnd(52)} p50 ${r.p50.toFixed(2).padStart(6)} ms   p99 ${r.p99.toFixed(2).padStart(6)} ms   ${r.rps.toFixed(0).padStart(6)} req/s   CPU/req node ${r.nodeCpu.toFixed(2)} ms, PostgreSQL ${r.postgresCpu.toFixed(2)} ms`;
    rows.push(fmt(`${name}: bare signature check (no I/O)`, bareRun));
    rows.push(fmt(`${name}: durable floor (verify + commit one insert)`, floorRun));
    rows.push(fmt(`${name}: Patchbay route (verify + inbox insert)`, realRun));
    rows.push(
      `${name}: against the durable floor p99 ×${(realRun.p99 / floorRun.p99).toFixed(2)} (goal ≤ 1.20), throughput ×${(realRun.rps / floorRun.rps).toFixed(2)} (goal ≥ 0.80)`,
    );
    const roundRatios = realRuns.map((run, i) => summary(run).p99 / summary(floorRuns[i]!).p99).sort((a, b) => a - b);
    rows.push(
      `${name}: p99 against the durable floor round by round: median ×${median(roundRatios).toFixed(2)}, from ×${roundRatios[0]!.toFixed(2)} to ×${roundRatios.at(-1)!.toFixed(2)}`,
    );
    rows.push(
      `${name}: against the bare check p99 ×${(realRun.p99 / bareRun.p99).toFixed(2)}, throughput ×${(realRun.rps / bareRun.rps).toFixed(2)}`,
    );
    const drain = median(drains);
    rows.push(
      `${name}: each burst of ${REQUESTS / ROUNDS} all worked ${Number.isFinite(drain) ? `${drain.toFixed(0)} ms` : 'not within a minute'} (median) after its last ack`,
    );
    await floor.close();
    await base.close();
    await real.close();
  }
  const stored = await database.db
    .selectFrom('inbound_deliveries')
    .select(({ fn }) => fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  console.log(
    `${REQUESTS} signed deliveries per handler and surface in ${ROUNDS} rounds, ${CONCURRENCY} concurrent, loopback; ${stored.n} stored in PostgreSQL; load average ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
  for (const row of rows) console.log(row);
} finally {
  await sender.terminate();
  await inbox.stop();
  await queue.stop();
  await linear.close();
  await database.close();
  await rm(dir, { recursive: true, force: true });
}
