import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Db } from '../../../db/database.ts';
import { describeError } from '../../core/errors.ts';
import {
  DeliverySource,
  type DeliveryInbox,
  type DeliveryInterpreter,
  type ReceivedDelivery,
  type StoredDelivery,
} from '../../core/delivery-interpreter.ts';
import { ArrivalClock, GroupCommitInbox } from './delivery-inbox.ts';
import { DeliveryJobSender } from './delivery-job-sender.ts';
import {
  createInboundDeliveryStore,
  type DeliveryRecord,
  type InboundDeliveryStore,
} from './inbound-delivery-store.ts';
import { defineQueue, ensureQueue } from '../worker/job-queue.ts';
import type { SessionService } from './session-service.ts';

export type { DeliveryRecord } from './inbound-delivery-store.ts';

/** A job names its stored delivery (jobs queued by earlier versions hold the id as a number). */
const DeliveryJob = z.object({ id: z.union([z.string(), z.number()]).transform(String) });

/** One retry policy for every surface: exponential backoff with jitter (pg-boss's), capped. */
export type RetryPolicy = {
  /** Attempts after the first. */
  retries: number;
  /** Seconds before the first retry; each further one waits about twice as long, jittered. */
  delaySeconds: number;
  /** The longest wait between attempts. */
  maxDelaySeconds: number;
};

export const defaultRetryPolicy: RetryPolicy = { retries: 8, delaySeconds: 2, maxDelaySeconds: 300 };

export type InboundPipelineOptions = {
  db: Db;
  boss: PgBoss;
  /** Where each interpreted delivery goes: the session service's `handle`. */
  service: Pick<SessionService, 'handle'>;
  log: Logger;
  retry?: RetryPolicy;
  /** Seconds without a heartbeat before a worked delivery counts as crashed and is tried again (pg-boss minimum: 10). */
  heartbeatSeconds?: number;
  /** Deliveries worked at once (default 8). */
  concurrency?: number;
  pollingIntervalSeconds?: number;
  /** How often rows without a job are looked for (after a crash between insert and send). */
  sweepMs?: number;
  /**
   * Finished deliveries (done, ignored, failed) older than this many days are deleted, at start
   * and then hourly; unset: kept. Longer than any sender retries, so a late retry is still a duplicate.
   */
  retentionDays?: number;
  /** While a burst is arriving, the longest its jobs wait to be sent together (default 1 s; see ArrivalClock). */
  sendWindowMs?: number;
  /** While a burst is arriving, the longest workers wait before working its deliveries (default 1 s; see ArrivalClock). */
  workWindowMs?: number;
};

type Job = { id: string; data: unknown; retryCount: number; signal: AbortSignal };

/**
 * The one way in for every surface:
 *
 *   receiver: verify → accept() (one insert, unique by meaning) → ack
 *   worker:   job → interpreter.interpret() → Inbound | ignore(reason) → service.handle() → reply(errand, outcome)
 *
 * A delivery is in the database before its sender hears back, so a crash after the ack loses
 * nothing: the job is sent right after the insert, and a sweep sends one for any row a crash left
 * without. Deliveries whose meaning was stored before are dropped at the insert. A failing delivery
 * is retried with the one retry policy; on its last attempt its thread is told why and it is kept,
 * listed by list({ failed: true }). No row lock is held while an interpreter talks to its service.
 * Deliveries that share an order key (one installation, one thread) are worked one at a time in the
 * order they were stored: a later one is parked while an earlier one is pending, retries included,
 * and sent on when that one ends.
 */
export class InboundPipeline implements DeliveryInbox {
  /** Stored deliveries to work, a job each (sent by DeliveryJobSender); worked by `#workBatch`. */
  static readonly deliveryQueue = defineQueue(
    'inbound-delivery',
    DeliveryJob,
    (pipeline: InboundPipeline, jobs: Job[]) => pipeline.#workBatch(jobs),
  );
  /** Jobs whose worker crashed on every attempt, so their delivery still ends as failed; worked by `#workGivenUp`. */
  static readonly givenUpQueue = defineQueue(
    'inbound-delivery-given-up',
    DeliveryJob,
    (pipeline: InboundPipeline, jobs: Job[]) => pipeline.#workGivenUp(jobs),
  );
  readonly #options: InboundPipelineOptions;
  readonly #retry: RetryPolicy;
  readonly #store: InboundDeliveryStore;
  readonly #arrivals = new ArrivalClock();
  readonly #sender: DeliveryJobSender;
  readonly #inbox: GroupCommitInbox;
  readonly #interpreters: { [S in DeliverySource]?: DeliveryInterpreter<unknown> } = {};
  readonly #stopping = new AbortController();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: InboundPipelineOptions) {
    this.#options = options;
    this.#retry = options.retry ?? defaultRetryPolicy;
    this.#store = createInboundDeliveryStore(options.db);
    const { boss, log } = options;
    this.#sender = new DeliveryJobSender({
      store: this.#store,
      boss,
      queue: InboundPipeline.deliveryQueue,
      arrivals: this.#arrivals,
      log,
      windowMs: options.sendWindowMs ?? 1000,
    });
    this.#inbox = new GroupCommitInbox({
      store: this.#store,
      arrivals: this.#arrivals,
      stored: (id) => this.#sender.send(id, { marked: true }),
    });
  }

  /** Stores the delivery before its receiver acks; 'duplicate' when its meaning was stored before. */
  accept(delivery: ReceivedDelivery): Promise<'accepted' | 'duplicate'> {
    return this.#inbox.accept(delivery);
  }

  /** Starts working deliveries with these interpreters (one per source). */
  async start(interpreters: readonly DeliveryInterpreter<unknown>[]): Promise<void> {
    for (const interpreter of interpreters) this.#interpreters[interpreter.source] = interpreter;
    const ready = this.#createQueues();
    this.#sender.queueReady(ready);
    await ready;
    const polling = this.#options.pollingIntervalSeconds ?? 2;
    // Each worker takes a few jobs at a time and works them together; while its fetches come back
    // full there is a backlog, and it fetches again at once instead of at its next poll.
    const batchSize = 4;
    const localConcurrency = Math.max(1, Math.ceil((this.#options.concurrency ?? 8) / batchSize));
    const fetch = { pollingIntervalSeconds: polling, notifyPollingIntervalSeconds: polling };
    const { boss } = this.#options;
    const { deliveryQueue, givenUpQueue } = InboundPipeline;
    await boss.work(
      deliveryQueue.name,
      { ...fetch, batchSize, burstWhenBatchFull: true, perJobResults: true, localConcurrency },
      (jobs) => deliveryQueue.handler(this, jobs),
    );
    await boss.work(givenUpQueue.name, fetch, (jobs) => givenUpQueue.handler(this, jobs));
    await this.#sweep(0);
    await this.#prune();
    let pruned = Date.now();
    this.#timer = setInterval(() => {
      void this.#sweep(30).catch((error: unknown) => this.#options.log.warn({ err: error }, 'inbound sweep failed'));
      if (Date.now() - pruned < 3_600_000) return;
      pruned = Date.now();
      void this.#prune();
    }, this.#options.sweepMs ?? 30_000);
    this.#timer.unref();
  }

  /** Stored deliveries, newest first; `failed` lists only those that failed on their last attempt. */
  list(options?: { failed?: boolean; limit?: number }): Promise<DeliveryRecord[]> {
    return this.#store.list(options);
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#stopping.abort();
    await this.#sender.settled();
    const { boss } = this.#options;
    const { deliveryQueue, givenUpQueue } = InboundPipeline;
    await boss.offWork(deliveryQueue.name).catch(() => undefined);
    await boss.offWork(givenUpQueue.name).catch(() => undefined);
  }

  async #createQueues(): Promise<void> {
    const { boss } = this.#options;
    const { deliveryQueue, givenUpQueue } = InboundPipeline;
    await ensureQueue(boss, givenUpQueue, {});
    await ensureQueue(boss, deliveryQueue, {
      policy: 'stately',
      retryLimit: this.#retry.retries,
      retryDelay: this.#retry.delaySeconds,
      retryBackoff: true,
      retryDelayMax: this.#retry.maxDelaySeconds,
      heartbeatSeconds: this.#options.heartbeatSeconds ?? 30,
      expireInSeconds: 15 * 60,
      deadLetter: givenUpQueue.name,
      // A stored delivery wakes a worker at once (pg-boss's LISTEN/NOTIFY) instead of at its next poll.
      notify: true,
    });
  }

  async #workBatch(jobs: Job[]) {
    // Acks first: while a burst is arriving, working its deliveries waits (a little).
    await this.#arrivals.paused(this.#options.workWindowMs ?? 1000);
    return Promise.all(
      jobs.map((job) =>
        this.#work(job).then(
          () => ({ id: job.id, status: 'completed' as const }),
          (error: unknown) => ({ id: job.id, status: 'failed' as const, output: { message: describeError(error) } }),
        ),
      ),
    );
  }

  /** One attempt at one delivery: normalize, hand to the session service, end it (or retry, or give up). */
  async #work(job: Job): Promise<void> {
    const { id } = InboundPipeline.deliveryQueue.parse(job.data);
    const delivery = await this.#store.begin(id);
    if (delivery === 'parked') {
      this.#options.log.debug({ inboundId: id }, 'delivery waits for an earlier one of its order key');
      return;
    }
    if (!delivery) return;
    const dlog = this.#options.log.child({
      inboundId: delivery.id,
      source: delivery.source,
      kind: delivery.kind,
      ...(delivery.deliveryId && { deliveryId: delivery.deliveryId }),
    });
    const interpreter = this.#interpreterOf(delivery);
    if (!interpreter) {
      await this.#finish(delivery, 'ignored', `no interpreter for ${delivery.source} is configured`);
      dlog.warn('delivery for an integration that is not configured; ignored');
      return;
    }
    const signal = AbortSignal.any([this.#stopping.signal, job.signal]);
    try {
      await this.#interpret(interpreter, delivery, signal, dlog);
    } catch (error) {
      const reason = describeError(error);
      await this.#store.recordError(delivery.id, reason);
      if (signal.aborted) throw error;
      if (job.retryCount >= this.#retry.retries) return this.#giveUp(delivery, reason, dlog);
      dlog.warn(
        { err: error, attempt: job.retryCount + 1, of: this.#retry.retries + 1 },
        'delivery failed; will retry',
      );
      throw error;
    }
  }

  async #interpret(
    interpreter: DeliveryInterpreter<unknown>,
    delivery: StoredDelivery,
    signal: AbortSignal,
    dlog: Logger,
  ): Promise<void> {
    const interpreted = await interpreter.interpret(delivery, signal);
    if (interpreted.kind === 'ignore') {
      await this.#finish(delivery, 'ignored', interpreted.reason);
      dlog.debug({ reason: interpreted.reason }, 'delivery ignored');
      return;
    }
    // The session service records this key in the same transaction as what it writes, so a retry
    // after a half-finished attempt writes nothing twice.
    const inbound = {
      ...interpreted.inbound,
      dedupeKey: interpreted.inbound.dedupeKey ?? `${delivery.source}:${delivery.dedupeKey}`,
    };
    const outcome = await this.#options.service.handle(inbound);
    if (interpreted.errand !== undefined) await interpreter.reply?.(interpreted.errand, outcome, signal);
    await this.#finish(delivery, 'done', outcome.kind);
    dlog.info(
      { inbound: inbound.kind, outcome: outcome.kind, ...('session' in outcome && { sessionId: outcome.session.id }) },
      'delivery handed to the session service',
    );
  }

  /** The configured interpreter that reads deliveries of this one's source, if any. */
  #interpreterOf(delivery: StoredDelivery): DeliveryInterpreter<unknown> | undefined {
    const source = DeliverySource.safeParse(delivery.source);
    return source.success ? this.#interpreters[source.data] : undefined;
  }

  /** A job whose worker died on every attempt (no throw reached #work). */
  async #workGivenUp(jobs: Job[]): Promise<void> {
    for (const job of jobs) {
      const delivery = await this.#store.pending(InboundPipeline.givenUpQueue.parse(job.data).id);
      if (delivery)
        await this.#giveUp(
          delivery,
          'its worker stopped on every attempt',
          this.#options.log.child({ inboundId: delivery.id }),
        );
    }
  }

  /** Ends a delivery; the next parked delivery of its order key, if any, gets its job. */
  async #finish(
    delivery: StoredDelivery,
    status: 'done' | 'ignored' | 'failed',
    outcome: string,
    error?: string,
  ): Promise<void> {
    const next = await this.#store.finish(delivery, status, outcome, error);
    if (next) this.#sender.send(next, { marked: false });
  }

  /** The last attempt failed: keep the delivery as failed and tell its thread why. */
  async #giveUp(delivery: StoredDelivery, reason: string, dlog: Logger): Promise<void> {
    await this.#finish(delivery, 'failed', 'gave up', reason);
    dlog.error({ attempts: delivery.attempt, reason }, 'delivery failed on its last attempt; telling its thread why');
    const interpreter = this.#interpreterOf(delivery);
    await interpreter
      ?.tellFailure(delivery, reason, AbortSignal.any([this.#stopping.signal, AbortSignal.timeout(60_000)]))
      .catch((error: unknown) => {
        dlog.warn({ err: error }, 'could not tell the thread why its delivery failed');
      });
  }

  async #sweep(olderThanSeconds: number): Promise<void> {
    const ids = await this.#store.unsent(olderThanSeconds);
    for (const id of ids) this.#sender.send(id, { marked: false });
    if (ids.length) this.#options.log.info({ count: ids.length }, 'queued stored deliveries that had no job');
  }

  /** Deletes finished deliveries past the retention, a thousand at a time. */
  async #prune(): Promise<void> {
    const days = this.#options.retentionDays;
    if (days === undefined) return;
    let deleted = 0;
    try {
      for (;;) {
        const count = await this.#store.deleteFinished(days, 1000);
        deleted += count;
        if (count < 1000 || this.#stopping.signal.aborted) break;
      }
    } catch (error) {
      this.#options.log.warn({ err: error }, 'could not delete old inbound deliveries; will try again in an hour');
    }
    if (deleted > 0)
      this.#options.log.info(
        { count: deleted, olderThanDays: days },
        'deleted finished inbound deliveries past their retention',
      );
  }
}

/** The pipeline for the composition root. */
export function createInboundPipeline(options: InboundPipelineOptions): InboundPipeline {
  return new InboundPipeline(options);
}
