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
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { startEmbeddedPostgres, type EmbeddedServer } from '../db/embedded-postgres.ts';
import type { StoredEvent } from '../src/core/events.ts';
import type { SessionRecord } from '../src/core/session-record.ts';
import { startPatchbayProcess } from '../test/helpers/server-process.ts';
import { startTcpProxy, type TcpProxy } from '../test/helpers/tcp-proxy.ts';

export type FleetKind = 'pause-past-lease' | 'database-outage';

export type FleetTrial = {
  kind: FleetKind;
  outcome: string;
  events: StoredEvent[];
  session: SessionRecord;
  /** Pause: events that landed after the paused worker was resumed (0 is right). */
  landedAfterResume?: number;
  /** Pause: SIGSTOP → the other worker's run-resumed; outage: database back → first new event. */
  recoveryMs?: number;
  error?: string;
};

type Proc = Awaited<ReturnType<typeof startPatchbayProcess>>;
type Fleet = { root: string; api: Proc; workers: [Proc, Proc]; proxy: TcpProxy; database: EmbeddedServer };

const HEARTBEAT_SECONDS = 10;
const LEASE_SECONDS = 10;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const terminal = (s: SessionRecord) => ['completed', 'failed', 'cancelled'].includes(s.status);

/** Polls `check` until it gives a value (errors count as not yet), or undefined after `timeoutMs`. */
export async function until<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
  everyMs = 25,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    await sleep(everyMs);
  }
  return undefined;
}

async function call<T>(fleet: Fleet, path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(`${fleet.api.url}${path}`, { ...init, headers: { 'content-type': 'application/json' } });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}
const eventsOf = (fleet: Fleet, id: string) => call<StoredEvent[]>(fleet, `/api/sessions/${id}/events?format=json`);
const sessionOf = (fleet: Fleet, id: string) => call<SessionRecord>(fleet, `/api/sessions/${id}`);

/** Starts the database, its proxy, the API and the two workers, configured from the environment only. */
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
  const start = (command: 'api' | 'worker', name: string) =>
    startPatchbayProcess(command, {
      ...env,
      DATA_DIR: join(options.root, name),
      ...(command === 'api' && { PORT: '0' }),
    });
  const [api, worker1, worker2] = await Promise.all([
    start('api', 'fleet-api'),
    start('worker', 'fleet-worker1'),
    start('worker', 'fleet-worker2'),
  ]);
  const fleet: Fleet = { root: options.root, api, workers: [worker1, worker2], proxy, database };
  const all = [api, worker1, worker2];
  return {
    trial: (kind: FleetKind, repoUrl: string) => fleetTrial(fleet, kind, repoUrl),
    /** Processes that ended on their own during the trials, with their last lines. */
    crashed: () =>
      all
        .filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)
        .map((p) => `pid ${p.pid}: ${JSON.stringify(p.lines().slice(-3))}`),
    async stop() {
      for (const p of all) {
        p.child.kill('SIGCONT');
        p.child.kill('SIGTERM');
      }
      await Promise.race([Promise.all(all.map((p) => p.exited)), sleep(20_000)]);
      for (const p of all) if (p.child.exitCode === null) p.child.kill('SIGKILL');
      await proxy.close();
      await database.stop();
    },
  };
}

/** One session on the fleet, with its fault injected while the session's long command runs. */
async function fleetTrial(fleet: Fleet, kind: FleetKind, repoUrl: string): Promise<FleetTrial> {
  const { id } = await call<{ id: string }>(fleet, '/api/sessions', {
    method: 'POST',
    body: JSON.stringify({
      repo: repoUrl,
      prompt: 'Write the three parts',
      author: { name: 'Trial', email: 'trial@example.com' },
    }),
  });
  // The worker whose workspace the long command is writing in.
  const holder = await until(
    async () => [1, 2].find((n) => existsSync(join(fleet.root, `fleet-worker${n}`, 'workspaces', id, 'part-a.txt'))),
    120_000,
    5,
  );
  if (holder === undefined) throw new Error(`the session ${id} never ran its command on a worker`);
  const measured =
    kind === 'pause-past-lease'
      ? await pausePastLease(fleet, id, fleet.workers[holder - 1]!)
      : await databaseOutage(fleet, id);
  const done = await until(
    async () => {
      const s = await sessionOf(fleet, id);
      return terminal(s) && s;
    },
    180_000,
    100,
  );
  const session = done ?? (await sessionOf(fleet, id));
  return {
    kind,
    outcome: done ? session.status : 'stuck',
    events: await eventsOf(fleet, id),
    session,
    ...measured,
    ...(session.error && { error: session.error }),
  };
}

async function pausePastLease(
  fleet: Fleet,
  id: string,
  paused: Proc,
): Promise<Pick<FleetTrial, 'recoveryMs' | 'landedAfterResume'>> {
  process.kill(paused.pid, 'SIGSTOP');
  const pausedAt = Date.now();
  const resumed = await until(
    async () => (await eventsOf(fleet, id)).find((e) => e.event.type === 'run-resumed'),
    (LEASE_SECONDS + 60) * 1000,
    100,
  );
  await until(async () => terminal(await sessionOf(fleet, id)), 180_000, 100);
  const before = (await eventsOf(fleet, id)).length;
  process.kill(paused.pid, 'SIGCONT');
  // Long enough for the woken worker to try its next steps (the result, next turns, push, PR).
  await sleep(8_000);
  return {
    ...(resumed && { recoveryMs: Date.parse(resumed.at) - pausedAt }),
    landedAfterResume: (await eventsOf(fleet, id)).length - before,
  };
}

async function databaseOutage(fleet: Fleet, id: string): Promise<Pick<FleetTrial, 'recoveryMs'>> {
  fleet.proxy.cut();
  await sleep((Math.max(HEARTBEAT_SECONDS, LEASE_SECONDS) + 5) * 1000);
  fleet.proxy.restore();
  const backAt = Date.now();
  const first = await until(
    async () => (await eventsOf(fleet, id)).find((e) => Date.parse(e.at) >= backAt - 200),
    120_000,
    100,
  );
  return first ? { recoveryMs: Date.parse(first.at) - backAt } : {};
}
