/**
 * The crash trials that need a fleet rather than one `patchbay serve`: one `patchbay api` and two
 * `patchbay worker` processes on one external PostgreSQL (a real server this script starts, reached
 * through a loopback TCP proxy that can take it away), each worker on its own data directory as on
 * its own host. Used by crash-trials.ts; loopback only.
 *
 * - `pause-past-lease`: the worker running the session is paused (SIGSTOP) in the middle of a
 *   command, past the queue heartbeat and the run lease, while the other takes the run over; once
 *   the session has ended it is resumed (SIGCONT), and anything it writes after that is counted.
 * - `database-outage`: every process loses the database (connections reset, new ones refused) for
 *   longer than the heartbeat and the lease, in the middle of a command, then it comes back.
 */
import { mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { startEmbeddedPostgres } from '../db/embedded-postgres.ts';
import type { StoredEvent } from '../src/core/events.ts';
import type { SessionRecord } from '../src/core/session-record.ts';
import { startPatchbayProcess } from '../test/helpers/server-process.ts';
import { startTcpProxy } from '../test/helpers/tcp-proxy.ts';

export type FleetKind = 'pause-past-lease' | 'database-outage';

export type FleetTrial = {
  kind: FleetKind;
  outcome: string;
  events: StoredEvent[];
  session: SessionRecord;
  /** Pause: events and transcript growth after the paused worker was resumed (0 is right). */
  landedAfterResume?: number;
  /** Pause: SIGSTOP → the other worker's run-resumed; outage: database back → first new event. */
  recoveryMs?: number;
  error?: string;
};

type Proc = Awaited<ReturnType<typeof startPatchbayProcess>>;

const HEARTBEAT_SECONDS = 10;
const LEASE_SECONDS = 10;

export async function startFleet(options: { root: string; env: Record<string, string> }) {
  const dbDir = join(options.root, 'fleet-db');
  await mkdir(dbDir, { recursive: true });
  const database = await startEmbeddedPostgres({ dataDir: dbDir, log: pino({ level: 'warn' }) });
  const target = new URL(database.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  const env = {
    ...options.env,
    DATABASE_URL: proxy.via(database.url),
    SANDBOX_EGRESS_ALLOW: 'none',
    QUEUE_HEARTBEAT_SECONDS: String(HEARTBEAT_SECONDS),
    QUEUE_MONITOR_SECONDS: '1',
    RUN_LEASE_SECONDS: String(LEASE_SECONDS),
  };
  delete (env as Record<string, string | undefined>).DATA_DIR;
  const start = (command: 'api' | 'worker', name: string) => startPatchbayProcess(command, { ...env, DATA_DIR: join(options.root, name), ...(command === 'api' && { PORT: '0' }) });
  const [api, ...workers] = (await Promise.all([start('api', 'fleet-api'), start('worker', 'fleet-worker1'), start('worker', 'fleet-worker2')])) as [Proc, Proc, Proc];
  const apiUrl = api.url!;
  const call = async <T>(path: string, init?: RequestInit): Promise<T> => {
    const response = await fetch(`${apiUrl}${path}`, { ...init, headers: { 'content-type': 'application/json' } });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const events = (id: string) => call<StoredEvent[]>(`/api/sessions/${id}/events?format=json`);
  const get = (id: string) => call<SessionRecord>(`/api/sessions/${id}`);
  const terminal = (s: SessionRecord) => ['completed', 'failed', 'cancelled'].includes(s.status);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  async function until<T>(check: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 25): Promise<T | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const value = await check().catch(() => undefined);
      if (value) return value;
      await sleep(everyMs);
    }
    return undefined;
  }
  /** The worker whose workspace the session's long command is writing in, once it runs. */
  const holderOf = async (id: string) => {
    const found = await until(async () => [1, 2].find((n) => existsSync(join(options.root, `fleet-worker${n}`, 'workspaces', id, 'part-a.txt'))), 120_000, 5);
    return found === undefined ? undefined : found - 1;
  };

  async function trial(kind: FleetKind, repoUrl: string): Promise<FleetTrial> {
    const { id } = await call<{ id: string }>('/api/sessions', {
      method: 'POST',
      body: JSON.stringify({ repo: repoUrl, prompt: 'Write the three parts', author: { name: 'Trial', email: 'trial@example.com' } }),
    });
    let recoveryMs: number | undefined;
    let landedAfterResume: number | undefined;
    const holder = await holderOf(id);
    if (holder === undefined) throw new Error(`the session ${id} never ran its command on a worker`);
    if (kind === 'pause-past-lease') {
      const paused = workers[holder]!;
      process.kill(paused.pid, 'SIGSTOP');
      const pausedAt = Date.now();
      const resumed = await until(async () => (await events(id)).find((e) => e.event.type === 'run-resumed'), (LEASE_SECONDS + 60) * 1000, 100);
      if (resumed) recoveryMs = Date.parse(resumed.at) - pausedAt;
      await until(async () => terminal(await get(id)), 180_000, 100);
      const before = (await events(id)).length;
      process.kill(paused.pid, 'SIGCONT');
      // Long enough for the woken worker to try its next steps (result, next turns, push, PR).
      await sleep(8_000);
      landedAfterResume = (await events(id)).length - before;
    } else {
      // Cut mid-command, for longer than the heartbeat and the lease; then the database is back.
      proxy.cut();
      await sleep((Math.max(HEARTBEAT_SECONDS, LEASE_SECONDS) + 5) * 1000);
      proxy.restore();
      const backAt = Date.now();
      const first = await until(async () => (await events(id)).find((e) => Date.parse(e.at) >= backAt - 200), 120_000, 100);
      if (first) recoveryMs = Date.parse(first.at) - backAt;
    }
    const done = await until(async () => {
      const s = await get(id);
      return terminal(s) && s;
    }, 180_000, 100);
    const session = done ?? (await get(id));
    return {
      kind,
      outcome: done ? session.status : 'stuck',
      events: await events(id),
      session,
      ...(recoveryMs !== undefined && { recoveryMs }),
      ...(landedAfterResume !== undefined && { landedAfterResume }),
      ...(session.error && { error: session.error }),
    };
  }

  return {
    trial,
    /** Processes that crashed on their own (exited) during the trials, with their last lines. */
    crashed(): string[] {
      return [api, ...workers].filter((p) => p.child.exitCode !== null || p.child.signalCode !== null).map((p) => `pid ${p.pid}: ${JSON.stringify(p.lines().slice(-3))}`);
    },
    /** Log lines above info of the worker that was not paused and the API (the paused one logs its refusals). */
    linesAbove: (level: number) => [api, ...workers].flatMap((p) => p.lines().filter((l) => (l.level ?? 0) >= level)),
    async stop() {
      for (const p of [api, ...workers]) {
        p.child.kill('SIGCONT');
        p.child.kill('SIGTERM');
      }
      await Promise.race([Promise.all([api, ...workers].map((p) => p.exited)), sleep(20_000)]);
      for (const p of [api, ...workers]) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await proxy.close();
      await database.stop();
    },
  };
}
