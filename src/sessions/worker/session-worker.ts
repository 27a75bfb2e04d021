import type { Logger } from 'pino';
import { z } from 'zod';
import type { Db } from '../../../db/database.ts';
import { isPatchbayError, PatchbayError } from '../../core/errors.ts';
import { throttleLog } from '../../core/log-throttle.ts';
import { runSession, type HarnessDeps } from '../../harness/run-session.ts';
import type { EventBus } from '../notify/event-bus.ts';
import { fencedHarness } from './fenced-harness.ts';
import { defineQueue } from './job-queue.ts';
import type { RunQueue } from './run-queue.ts';
import type { RunLease, RunLeases } from './run-leases.ts';
import type { SessionStore } from '../store/session-store.ts';
import { afterRun, wakeReadyParents } from '../subtasks/session-children.ts';
import { createWaitingLine } from './waiting-line.ts';

/**
 * A run's job: the session id (everything else is in the database) and, when traces are on,
 * `traceparent`, the W3C trace context of the delivery that asked for the run, so the run joins
 * that delivery's trace on whichever worker takes it.
 */
const RunJob = z.object({ sessionId: z.string().min(1), traceparent: z.string().optional() });
export type RunJob = z.infer<typeof RunJob>;

/** Runs of sessions, a job each (sent by RunQueue.enqueue, run-queue.ts); worked by `runJob`. */
export const runQueue = defineQueue('run-session', RunJob, runJob);
/** Runs that used up their retries land here, so their session can be told why it stopped; worked by `giveUp`. */
export const givenUpRunQueue = defineQueue('run-session-given-up', RunJob, giveUp);

type WaitingLine = ReturnType<typeof createWaitingLine>;
type LevelLog = ReturnType<typeof throttleLog>;

export type SessionWorker = {
  /**
   * Stops taking runs, gives running ones `graceMs` to finish, then interrupts the rest and hands
   * them back to the queue at once (the next worker resumes them from the log). Resolves when no
   * run of this worker is left.
   */
  stop(graceMs: number): Promise<void>;
  /** Sessions whose runs this worker is running now (they hold their queue jobs). */
  running(): ReadonlySet<string>;
};

/** What the worker is given. */
export type SessionWorkerDeps = {
  queue: RunQueue;
  bus: EventBus;
  store: SessionStore;
  /** The database the run's checkpoints and check runs are written to, under its lease. */
  db: Db;
  harness: HarnessDeps;
  log: Logger;
  concurrency?: number;
  /** Run leases, which are also the run slots of MAX_RUNNING_SESSIONS (`leases.max`). */
  leases: RunLeases;
  /**
   * No other process can hold a lease that is not this worker's: it has just started its own
   * embedded database. A predecessor's leases are taken over at once instead of after they lapse.
   */
  exclusive?: boolean;
  /** How often a waiting run tries for a slot again (between notices of sessions ending). */
  slotRetryMs?: number;
};

/** One worker's state, shared by the steps below: its runs, whether it stops, its throttled logs. */
type Worker = SessionWorkerDeps & {
  line: WaitingLine;
  running: Map<string, { controller: AbortController; done: Promise<unknown> }>;
  state: { stopping: boolean };
  notRecorded: LevelLog;
  databaseLost: LevelLog;
  renewFailed: LevelLog;
};

/**
 * Takes runs from the durable queue and drives each through the harness. A stop request reaches
 * the run through the event bus (any process may have handled it) and aborts it. Each run holds
 * its session's lease (run-leases.ts) and writes only under it: the queue decides who should run a
 * session, the lease's epoch decides whose writes land, so a worker that was paused past its lease
 * and wakes up cannot write over the run that took its place.
 */
export async function startSessionWorker(deps: SessionWorkerDeps): Promise<SessionWorker> {
  const { log, leases } = deps;
  const worker: Worker = {
    ...deps,
    line: createWaitingLine({ store: deps.store, log, ...(leases.max !== undefined && { limit: leases.max }) }),
    running: new Map(),
    state: { stopping: false },
    notRecorded: throttleLog((fields, message) => log.error(fields, message)),
    databaseLost: throttleLog((fields, message) => log.warn(fields, message)),
    renewFailed: throttleLog((fields, message) => log.warn(fields, message)),
  };
  await deps.queue.work((job, signal) => runQueue.handler(worker, job, signal), {
    concurrency: deps.concurrency ?? 2,
  });
  await deps.queue.workGivenUp((job) => givenUpRunQueue.handler(worker, job));
  const sweeps = await startSweeps(worker);
  return {
    running: () => new Set(worker.running.keys()),
    stop: (graceMs) => stopWorker(worker, sweeps, graceMs),
  };
}

/** One job of the run queue: the session's run under its lease, until it ends, stops or is taken over. */
async function runJob(worker: Worker, { sessionId }: RunJob, jobSignal?: AbortSignal): Promise<void> {
  const controller = new AbortController();
  const unsubscribe = abortOnStop(worker, sessionId, controller);
  const signal = jobSignal ? AbortSignal.any([controller.signal, jobSignal]) : controller.signal;
  const done = runUnderLease(worker, sessionId, controller, signal);
  worker.running.set(sessionId, { controller, done: done.catch(() => undefined) });
  try {
    await done;
  } catch (error) {
    worker.notRecorded({ err: error, sessionId }, 'run could not be recorded; the queue will retry it');
    throw error;
  } finally {
    unsubscribe();
    worker.running.delete(sessionId);
  }
  await afterRun(worker, sessionId);
  // Interrupted by a shutdown: ask for the run again, so the next worker takes it at once
  // (the queue keeps one waiting run per session beside this active one).
  if (isShutdown(controller.signal.reason)) await worker.queue.enqueue(sessionId);
}

/** Aborts the run when its session is cancelled (a stop request, handled by any process). */
function abortOnStop(worker: Worker, sessionId: string, controller: AbortController): () => void {
  const { store, log } = worker;
  return worker.bus.subscribe(sessionId, (notice) => {
    if (notice.type !== 'status-changed') return;
    // Caught: an unhandled rejection here (a database blip) would take the whole worker down.
    store.get(sessionId).then(
      (session) => {
        if (session?.status === 'cancelled') controller.abort(new Error('stopped'));
      },
      (error: unknown) =>
        log.warn({ err: error, sessionId }, 'could not check for a stop; the run checks again before its next turn'),
    );
  });
}

/** Takes the lease, keeps it while the run works and gives it back after; a lost lease ends the run quietly. */
async function runUnderLease(
  worker: Worker,
  sessionId: string,
  controller: AbortController,
  signal: AbortSignal,
): Promise<void> {
  const { log } = worker;
  const lease = await waitForLease(worker, sessionId, signal);
  if (!lease) return;
  const kept = keepLease(worker, lease, controller);
  try {
    await worker.line
      .started(sessionId)
      .catch((error: unknown) => log.warn({ err: error, sessionId }, 'could not tell the session it starts'));
    await runThroughOutages(worker, sessionId, lease, signal);
  } catch (error) {
    // The run is another worker's now: nothing to retry, nothing to record.
    if (!isPatchbayError(error, 'lease_lost')) throw error;
  } finally {
    kept.stop();
    if (!kept.lost())
      await worker.leases
        .release(lease)
        .catch((error: unknown) =>
          log.warn({ err: error, sessionId }, 'could not give the run lease back; it lapses on its own'),
        );
  }
}

/**
 * Runs the session; a run that failed because the database went away (it does not answer right
 * after) waits for it with backoff and carries on from the log once it is back. This worker still
 * holds the run's job, so nobody else takes it meanwhile, and no queue retry is spent on an outage.
 */
async function runThroughOutages(
  worker: Worker,
  sessionId: string,
  lease: RunLease,
  signal: AbortSignal,
): Promise<void> {
  const { store, log, state } = worker;
  // Every write of the run goes through the lease.
  const fenced = fencedHarness(worker.harness, lease, { store, db: worker.db, log });
  for (;;) {
    try {
      return await runSession(sessionId, fenced, signal);
    } catch (error) {
      if (signal.aborted || state.stopping || isPatchbayError(error, 'lease_lost') || (await store.answers()))
        throw error;
      worker.databaseLost(
        { err: error, sessionId },
        'a run lost the database; it carries on once the database answers again',
      );
      for (let waitMs = 250; !(await store.answers()); waitMs = Math.min(waitMs * 2, MAX_OUTAGE_BACKOFF_MS)) {
        await abortableSleep(waitMs, signal);
        if (signal.aborted || state.stopping) throw error;
      }
      log.info({ sessionId }, 'the database is back; resuming the run');
    }
  }
}

/**
 * A run that crashed or failed to record on every attempt: the session must not stay 'running'
 * with nobody told. Its threads learn why from the status change.
 */
async function giveUp(worker: Worker, { sessionId, attempts }: { sessionId: string; attempts: number }) {
  const reason = `the run was given up after ${attempts} attempts (its worker kept crashing or could not reach the database); send a message to try again`;
  worker.log.error({ sessionId, attempts }, 'run given up');
  await worker.store.transition(sessionId, 'fail', {
    reason,
    patch: { error: reason },
    events: [{ event: { type: 'error', code: 'run_given_up', message: reason } }],
  });
  await afterRun(worker, sessionId);
}

/**
 * Takes the session's run lease: at once when nobody holds it, after it lapses when a run that is
 * gone (crashed, paused, cut off) still holds it, and only while a run slot is free. Tells the
 * session where it stands once when the slots are full. Returns undefined when the run is no
 * longer wanted meanwhile (stopped, ended, or this worker shuts down).
 */
async function waitForLease(worker: Worker, sessionId: string, signal: AbortSignal): Promise<RunLease | undefined> {
  const { leases, log } = worker;
  let told = false;
  let waited = false;
  for (;;) {
    if (signal.aborted) return undefined;
    const taken = await leases.take(sessionId, { breakForeign: worker.exclusive ?? false });
    if (taken.kind === 'taken') {
      if (waited) log.info({ sessionId, epoch: taken.lease.epoch }, 'took over the run after its lease lapsed');
      return taken.lease;
    }
    const session = await worker.store.get(sessionId);
    if (!session || (session.status !== 'queued' && session.status !== 'running')) return undefined;
    if (taken.kind === 'held') {
      if (!waited)
        log.info(
          { sessionId, owner: taken.owner, until: taken.until.toISOString() },
          "another run holds the session's lease; taking it over once it lapses",
        );
      waited = true;
      await abortableSleep(Math.min(Math.max(50, taken.until.getTime() - Date.now() + 50), leases.leaseMs), signal);
      continue;
    }
    if (!told) {
      told = true;
      await worker.line
        .tell(sessionId)
        .catch((error: unknown) =>
          log.warn({ err: error, sessionId }, 'could not tell a queued session where it stands'),
        );
    }
    await waitForSlot(worker, signal);
  }
}

/** Waits a while for a run slot; woken early when any session changes status (one may have ended). */
function waitForSlot(worker: Worker, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, worker.slotRetryMs ?? 1000);
    const unsubscribe = worker.bus.subscribe('*', (notice) => notice.type === 'status-changed' && done());
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Renews the lease a few times per lease period while the run works. When a renewal finds the
 * epoch moved on (this worker was paused or cut off past the lease and another took over), the
 * run is aborted: it stops at once instead of at its next refused write. A renewal that fails
 * (the database is away) is tried again; the lease lapses on its own if it stays away.
 */
function keepLease(worker: Worker, lease: RunLease, controller: AbortController): { stop(): void; lost(): boolean } {
  let lost = false;
  const timer = setInterval(
    () => {
      worker.leases.renew(lease).then(
        (renewed) => {
          if (renewed || lost) return;
          lost = true;
          worker.log.warn(
            { sessionId: lease.sessionId, epoch: lease.epoch },
            'this run was taken over by another run after its lease lapsed; it stops here and writes nothing more',
          );
          controller.abort(LEASE_LOST);
        },
        (error: unknown) =>
          worker.renewFailed({ err: error, sessionId: lease.sessionId }, 'could not renew a run lease; trying again'),
      );
    },
    Math.max(250, worker.leases.leaseMs / 3),
  );
  return { stop: () => clearInterval(timer), lost: () => lost };
}

/**
 * The worker's background looks: sessions no worker has taken for a few seconds (every worker is
 * busy) hear where they stand, and a session whose run never reached the queue (the process died
 * between writing the session and enqueueing it) is queued again; the queue keeps a single run per
 * session, so extra asks are free. The second runs once before the worker starts.
 */
async function startSweeps(worker: Worker): Promise<{ stop(): void }> {
  const { log } = worker;
  const teller = setInterval(
    () =>
      void worker.line
        .tellWaiting(5)
        .catch((error: unknown) => log.warn({ err: error }, 'queue position sweep failed')),
    5_000,
  );
  teller.unref();
  const sweep = async () => {
    for (const sessionId of await worker.store.idleQueued(30)) await worker.queue.enqueue(sessionId);
    await wakeReadyParents(worker);
  };
  const timer = setInterval(
    () => void sweep().catch((error: unknown) => log.warn({ err: error }, 'queued-session sweep failed')),
    60_000,
  );
  timer.unref();
  await sweep();
  return {
    stop: () => {
      clearInterval(timer);
      clearInterval(teller);
    },
  };
}

async function stopWorker(worker: Worker, sweeps: { stop(): void }, graceMs: number): Promise<void> {
  const { running, log } = worker;
  if (worker.state.stopping) return;
  worker.state.stopping = true;
  sweeps.stop();
  await worker.queue.stopTaking();
  if (running.size > 0) {
    log.info({ runs: running.size, graceSeconds: graceMs / 1000 }, 'waiting for running steps to finish');
    await settled(
      [...running.values()].map((r) => r.done),
      graceMs,
    );
  }
  if (running.size > 0) {
    log.info({ sessions: [...running.keys()] }, 'interrupting runs; the queue hands them to the next worker');
    for (const run of running.values()) run.controller.abort(SHUTDOWN);
    // Aborted runs end within moments (tools and model calls follow the signal); bounded anyway.
    await settled(
      [...running.values()].map((r) => r.done),
      15_000,
    );
  }
}

/** The longest wait between two looks for a database that went away. */
const MAX_OUTAGE_BACKOFF_MS = 10_000;

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

const SHUTDOWN = new PatchbayError('aborted', 'the server is shutting down', { retryable: true });
const LEASE_LOST = new PatchbayError('lease_lost', 'the run was taken over by another run');
const isShutdown = (reason: unknown) => reason === SHUTDOWN;

async function settled(promises: Promise<unknown>[], timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(promises),
    new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
  ]);
  clearTimeout(timer);
}
