/**
 * Scale-out: 100 scripted sessions through one `patchbay api` and 1, then 2, `patchbay worker`
 * processes (real processes, environment-only configuration) on one PostgreSQL server, a fresh
 * database per configuration. Prints throughput (sessions finished per minute, first request to last
 * completion), queue-to-start latency (session created → its run started, from the event log's own
 * times) at p50 and p99, and a worker's resident memory per running session (its RSS above idle,
 * divided by the runs it held at that moment, median over samples taken while runs were going;
 * sandbox commands are processes of their own and not in that figure). Prints the load average too.
 *
 *   node bench/scale-out.ts [--sessions 100] [--concurrency 4] [--database-url postgres://postgres@127.0.0.1:5432/postgres]
 *
 * The database URL is an admin connection used to create and drop one database per configuration
 * (default: the local server, as in the test setup). Loopback only; the repository is a local one.
 */
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createRemote } from '../test/git/git-fixture.ts';
import { startPatchbayProcess } from '../test/helpers/server-process.ts';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '4' },
    'database-url': {
      type: 'string',
      default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    },
  },
});
const SESSIONS = Number(values.sessions);
const CONCURRENCY = values.concurrency!;
const adminUrl = values['database-url']!;

const root = await mkdtemp(join(tmpdir(), 'patchbay-scale-bench-'));
await chmod(root, 0o755);
const remote = await createRemote();
const scenarioPath = join(root, 'scenario.json');
await writeFile(
  scenarioPath,
  JSON.stringify({
    turns: [
      { toolCalls: [{ name: 'write_file', input: { path: 'NOTE.md', content: 'written by the bench\n' } }] },
      { text: 'Wrote NOTE.md.' },
    ],
    verifier: [{ toolCalls: [{ name: 'record_verdict', input: { outcome: 'passed', summary: 'ok', findings: [] } }] }],
  }),
);

type Figures = {
  workers: number;
  seconds: number;
  perMinute: number;
  p50: number;
  p99: number;
  memoryPerRunMb?: number;
  idleMb: number;
  completed: number;
  load: string;
};

async function trial(workers: number): Promise<Figures> {
  const name = `patchbay_bench_${process.pid}_${workers}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = new pg.Client({ connectionString: url.toString() });
  const env = {
    DATABASE_URL: url.toString(),
    LOG_LEVEL: 'warn',
    MODEL_PROVIDER: 'scripted',
    SCRIPTED_SCENARIO: scenarioPath,
    SANDBOX_EGRESS_ALLOW: 'none',
    PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
    WORKER_CONCURRENCY: CONCURRENCY,
  };
  const procs: Awaited<ReturnType<typeof startPatchbayProcess>>[] = [];
  try {
    // Migrations run once, in the API process, before the workers join.
    const api = await startPatchbayProcess('api', {
      ...env,
      LOG_LEVEL: 'info',
      DATA_DIR: join(root, `api-${workers}`),
      PORT: '0',
    });
    procs.push(api);
    for (let i = 0; i < workers; i++)
      procs.push(
        await startPatchbayProcess('worker', {
          ...env,
          LOG_LEVEL: 'info',
          DATA_DIR: join(root, `worker-${workers}-${i}`),
        }),
      );
    await db.connect();
    const workerPids = procs.slice(1).map((p) => p.pid);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const idle = workerPids.map(rssMb);

    const samples: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        if (workers === 1) {
          const { rows } = await db.query<{ n: string }>(`select count(*) as n from sessions where status = 'running'`);
          const running = Number(rows[0]!.n);
          if (running > 0) samples.push((rssMb(workerPids[0]!) - idle[0]!) / running);
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();

    const began = Date.now();
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, i) => {
        const response = await fetch(`${api.url}/api/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ repo: remote.remote, prompt: `bench session ${i}` }),
        });
        if (response.status !== 201)
          throw new Error(`POST /api/sessions answered ${response.status}: ${await response.text()}`);
      }),
    );
    for (;;) {
      const { rows } = await db.query<{ n: string }>(
        `select count(*) as n from sessions where status not in ('completed', 'failed', 'cancelled')`,
      );
      if (Number(rows[0]!.n) === 0) break;
      if (Date.now() - began > 30 * 60_000) throw new Error('sessions did not finish within 30 minutes');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    sampling = false;
    await sampler;
    const { rows: ends } = await db.query<{ last: Date; completed: string }>(
      `select max(updated_at) as last, count(*) filter (where status = 'completed') as completed from sessions`,
    );
    const { rows: waits } = await db.query<{ ms: number }>(`
      select extract(epoch from (r.at - c.at)) * 1000 as ms
        from session_events c
        join lateral (select at from session_events r where r.session_id = c.session_id and r.type = 'status-changed' and r.data->>'to' = 'running' order by seq limit 1) r on true
       where c.type = 'session-created'`);
    const latencies = waits.map((w) => Number(w.ms)).sort((a, b) => a - b);
    const seconds = (ends[0]!.last.getTime() - began) / 1000;
    samples.sort((a, b) => a - b);
    return {
      workers,
      seconds,
      perMinute: (SESSIONS / seconds) * 60,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      ...(samples.length > 0 && { memoryPerRunMb: percentile(samples, 0.5) }),
      idleMb: idle.reduce((a, b) => a + b, 0) / idle.length,
      completed: Number(ends[0]!.completed),
      load: loadavg()
        .map((l) => l.toFixed(2))
        .join(' '),
    };
  } finally {
    for (const proc of procs) proc.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => p.exited));
    await db.end().catch(() => undefined);
    await admin.query(`drop database if exists ${name} with (force)`).catch(() => undefined);
    await admin.end();
  }
}

function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0) / 1024;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

try {
  const results: Figures[] = [];
  for (const workers of [1, 2]) results.push(await trial(workers));
  const base = results[0]!;
  console.log(
    `${SESSIONS} scripted sessions (write a file, commit, verify, push), WORKER_CONCURRENCY=${CONCURRENCY} per worker, one API process; ${process.env.NODE_ENV ?? ''}`.trim(),
  );
  for (const r of results) {
    console.log(
      `${r.workers} worker${r.workers === 1 ? ' ' : 's'}: ${r.completed}/${SESSIONS} completed in ${r.seconds.toFixed(1)} s, ${r.perMinute.toFixed(1)} sessions/min (${(r.perMinute / base.perMinute).toFixed(2)}x one worker); ` +
        `queue-to-start p50 ${(r.p50 / 1000).toFixed(2)} s, p99 ${(r.p99 / 1000).toFixed(2)} s; load average ${r.load}`,
    );
  }
  if (base.memoryPerRunMb !== undefined) {
    console.log(
      `worker memory: ${base.idleMb.toFixed(0)} MB resident idle, ${base.memoryPerRunMb.toFixed(1)} MB more per running session (median over samples, one worker)`,
    );
  }
} finally {
  await remote.cleanup();
  await rm(root, { recursive: true, force: true });
}
