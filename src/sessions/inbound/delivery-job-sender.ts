import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { ArrivalClock } from './delivery-inbox.ts';
import type { InboundDeliveryStore } from './inbound-delivery-store.ts';
import type { QueueDefinition } from '../worker/job-queue.ts';

export type DeliveryJob = { id: string };

/**
 * Sends the jobs of stored deliveries, in batches: one job insert for the deliveries of a burst
 * (see ArrivalClock), once the quiet period after it has passed for a lone one. Off the ack path; a
 * failure is left to the sweep.
 * Deliveries stored by the inbox are marked as sent by their insert; the others (the sweep's, a
 * parked one sent on) are marked here first, for the same reason (see insertMarked()).
 */
type SenderDeps = {
  store: InboundDeliveryStore;
  boss: PgBoss;
  queue: QueueDefinition<DeliveryJob>;
  arrivals: ArrivalClock;
  log: Logger;
  /** While deliveries keep arriving, the longest their jobs wait to be sent together. */
  windowMs: number;
};

export class DeliveryJobSender {
  readonly #deps: SenderDeps;
  readonly #toSend: string[] = [];
  readonly #toMark = new Set<string>();
  readonly #inFlight = new Set<Promise<void>>();
  #sending = false;
  #queueReady: Promise<void> | undefined;

  constructor(deps: SenderDeps) {
    this.#deps = deps;
  }

  /** Jobs wait for the queue to exist. */
  queueReady(ready: Promise<void>): void {
    this.#queueReady = ready;
  }

  send(id: string, options: { marked: boolean }): void {
    this.#toSend.push(id);
    if (!options.marked) this.#toMark.add(id);
    if (this.#sending) return;
    this.#sending = true;
    // One send in flight at a time; whatever is stored meanwhile goes in the next one.
    const sent = this.#sendAll().finally(() => {
      this.#sending = false;
    });
    this.#inFlight.add(sent);
    void sent.finally(() => this.#inFlight.delete(sent));
  }

  /** Resolves when the sends under way have ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#inFlight]);
  }

  async #sendAll(): Promise<void> {
    await this.#queueReady;
    await new Promise((resolve) => setImmediate(resolve));
    while (this.#toSend.length > 0) {
      // While a burst is being stored, its jobs go in one insert per window instead of one per batch.
      await this.#deps.arrivals.paused(this.#deps.windowMs);
      const ids = await this.#marked(this.#toSend.splice(0));
      if (ids.length > 0) await this.#insertJobs(ids);
    }
  }

  /** Marks those not yet marked; returns the ids whose jobs may be inserted. */
  async #marked(ids: string[]): Promise<string[]> {
    const mark = ids.filter((id) => this.#toMark.delete(id));
    if (mark.length === 0) return ids;
    try {
      await this.#deps.store.markQueued(mark);
      return ids;
    } catch (error) {
      this.#deps.log.warn({ err: error, count: mark.length }, 'could not queue stored deliveries; the sweep will');
      return ids.filter((id) => !mark.includes(id));
    }
  }

  async #insertJobs(ids: string[]): Promise<void> {
    const { boss, queue, store, log } = this.#deps;
    try {
      // One job per delivery at a time: the queue is stately, keyed by the delivery's id.
      await boss.insert(
        queue.name,
        ids.map((id) => ({ data: { id } satisfies DeliveryJob, singletonKey: id })),
      );
    } catch (error) {
      await store.unmarkQueued(ids).catch(() => undefined);
      log.warn({ err: error, count: ids.length }, 'could not queue stored deliveries; the sweep will');
    }
  }
}
