import { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import { throttleLog } from '../../core/log-throttle.ts';
import { ensureQueue } from './job-queue.ts';
import { givenUpRunQueue, type RunJob, runQueue } from './session-worker.ts';

export type { RunJob } from './session-worker.ts';

export interface RunQueue {
  /** Asks for a run of the session. At most one runs and one waits per session at any time. */
  enqueue(sessionId: string, options?: { traceparent?: string | undefined }): Promise<void>;
  /** Starts taking jobs (the session worker gives `runQueue.handler`). A handler that throws is retried; a crashed worker's job is retried after its heartbeat lapses. */
  work(handler: (job: RunJob, signal: AbortSignal) => Promise<void>, options?: { concurrency?: number }): Promise<void>;
  /** Takes runs that failed or crashed on every attempt (the session worker gives `givenUpRunQueue.handler`). */
  workGivenUp(handler: (job: RunJob & { attempts: number }) => Promise<void>): Promise<void>;
  /** Stops fetching runs; handlers already running carry on. */
  stopTaking(): Promise<void>;
  /**
   * Puts every run marked active back in the queue, to start at once. Only for a process that
   * knows no other worker can hold them: one that just started its own embedded database.
   */
  reclaimActive(options?: { except?: ReadonlySet<string> }): Promise<number>;
  stop(): Promise<void>;
}

export type RunQueueOptions = {
  url: string;
  log: Logger;
  /** Seconds without a heartbeat before a running job counts as crashed (pg-boss minimum: 10). */
  heartbeatSeconds?: number;
  pollingIntervalSeconds?: number;
  /** How often pg-boss looks for crashed jobs. */
  monitorIntervalSeconds?: number;
  /** Attempts after the first before a run is given up. */
  retryLimit?: number;
};

/**
 * The durable queue, on pg-boss. The queue is 'stately' keyed by session id: one run active and
 * one queued per session, so runs of a session never overlap and a burst of messages costs one
 * extra run, not one each. Jobs carry only the session id (and a trace context); everything else is in the database.
 */
export async function createRunQueue(options: RunQueueOptions): Promise<RunQueue & { boss: PgBoss }> {
  const boss = await startBoss(options);
  const settings = {
    heartbeatSeconds: options.heartbeatSeconds ?? 30,
    // A run's length is bounded by the runner's own budget; the heartbeat detects crashes.
    expireInSeconds: 24 * 3600,
    retryLimit: options.retryLimit ?? 20,
    retryDelay: 1,
    notify: true,
    deadLetter: givenUpRunQueue.name,
  };
  await ensureQueue(boss, givenUpRunQueue, { notify: true });
  await ensureQueue(boss, runQueue, { policy: 'stately', ...settings });

  let workerId: string | undefined;
  let wakeAt: number | undefined;
  /** Wakes this process's run worker at `at` (once it works), so it fetches without waiting for its poll. */
  const wakeWorkerAt = (at: number) => {
    wakeAt = at;
    if (!workerId) return;
    const id = workerId;
    setTimeout(() => boss.notifyWorker(id), Math.max(0, at - Date.now())).unref();
  };

  return {
    /** The started pg-boss instance, shared with the inbound pipeline's queue (one pool, one monitor). */
    boss,
    async enqueue(sessionId, enqueueOptions) {
      const traceparent = enqueueOptions?.traceparent;
      await boss.send(runQueue.name, { sessionId, ...(traceparent && { traceparent }) } satisfies RunJob, {
        singletonKey: sessionId,
      });
    },
    async work(handler, workOptions = {}) {
      workerId = await boss.work(
        runQueue.name,
        {
          localConcurrency: workOptions.concurrency ?? 2,
          pollingIntervalSeconds: options.pollingIntervalSeconds ?? 2,
          // NOTIFY wakes workers for new runs, but not for a crashed run put back by the monitor:
          // keep polling at the normal pace so those resume promptly.
          notifyPollingIntervalSeconds: options.pollingIntervalSeconds ?? 2,
        },
        async (jobs) => {
          for (const job of jobs) await handler(runQueue.parse(job.data), job.signal);
        },
      );
      if (wakeAt !== undefined) wakeWorkerAt(wakeAt);
    },
    async workGivenUp(handler) {
      await workGivenUpRuns(boss, options.pollingIntervalSeconds ?? 2, settings.retryLimit + 1, handler);
    },
    async stopTaking() {
      await boss.offWork(runQueue.name, { wait: false });
      await boss.offWork(givenUpRunQueue.name, { wait: false });
    },
    async reclaimActive(reclaimOptions = {}) {
      const reclaimed = await reclaimActiveRuns(boss, reclaimOptions.except);
      if (reclaimed > 0) wakeWorkerAt(Date.now());
      return reclaimed;
    },
    async stop() {
      await boss.stop({ graceful: true, timeout: 10_000 });
    },
  };
}

/** Takes the dead-lettered runs, each with the number of attempts it was given. */
async function workGivenUpRuns(
  boss: PgBoss,
  polling: number,
  attempts: number,
  handler: (job: RunJob & { attempts: number }) => Promise<void>,
): Promise<void> {
  // Dead-lettered jobs are moved by pg-boss, with no NOTIFY: poll at the normal pace.
  await boss.work(
    givenUpRunQueue.name,
    { pollingIntervalSeconds: polling, notifyPollingIntervalSeconds: polling },
    async (jobs) => {
      for (const job of jobs) await handler({ ...givenUpRunQueue.parse(job.data), attempts });
    },
  );
}

/** Puts the runs marked active (but for the sessions in `except`) back in the queue to start now; how many. */
async function reclaimActiveRuns(boss: PgBoss, except?: ReadonlySet<string>): Promise<number> {
  const active = await activeRuns(boss, except);
  if (active.length === 0) return 0;
  // A failed run waits `retryDelay` (1 s) before its retry; these were cut off, not failing, so
  // their retries start now, and the caller wakes its worker at once rather than at its next poll
  // (up to 2 s later): a restarted server resumes its runs as soon as it works.
  await boss.fail(runQueue.name, active, { message: 'its worker process is gone' });
  for (const id of active) await boss.update(runQueue.name, undefined, { id, startAfter: new Date() });
  return active.length;
}

/** Starts the pg-boss instance of the queues, its errors logged (throttled) rather than thrown. */
async function startBoss(options: RunQueueOptions): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: options.url,
    max: 4,
    monitorIntervalSeconds: options.monitorIntervalSeconds ?? 15,
    superviseIntervalSeconds: options.monitorIntervalSeconds ?? 15,
    // Wake workers the moment a run is enqueued; polling stays as the floor.
    useListenNotify: true,
  });
  const queueError = throttleLog((fields, message) => options.log.error(fields, message));
  boss.on('error', (error: unknown) => queueError({ err: error }, 'job queue error'));
  await boss.start();
  return boss;
}

/** The ids of the run jobs marked active, but for the sessions in `except`. */
async function activeRuns(boss: PgBoss, except?: ReadonlySet<string>): Promise<string[]> {
  const active: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await boss.findJobs<RunJob>(runQueue.name, { limit: 5000, ...(after && { after }) });
    active.push(
      ...page.filter((job) => job.state === 'active' && !except?.has(job.data.sessionId)).map((job) => job.id),
    );
    if (page.length < 5000) return active;
    after = page.at(-1)!.id;
  }
}
