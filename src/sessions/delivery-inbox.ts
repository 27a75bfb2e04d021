import type { DeliveryInbox, ReceivedDelivery } from '../core/delivery-interpreter.ts';
import { meaningKey, type PgInboundDeliveryStore } from './inbound-delivery-store.ts';

/**
 * When deliveries last arrived. While a burst is arriving, the acks go first: the jobs of its
 * deliveries wait to be sent together, and workers wait a little before working them.
 */
export class ArrivalClock {
  #lastArrival = 0;

  arrived(): void {
    this.#lastArrival = performance.now();
  }

  /** Resolves once no delivery has arrived for `quietMs`, or after `maxMs`. */
  async paused(maxMs: number, quietMs = 3): Promise<void> {
    const start = performance.now();
    for (;;) {
      const now = performance.now();
      const wait = Math.min(quietMs - (now - this.#lastArrival), maxMs - (now - start));
      if (wait <= 0) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

type Waiting = {
  delivery: ReceivedDelivery;
  settle: (stored: 'accepted' | 'duplicate') => void;
  fail: (error: unknown) => void;
};

/** PostgreSQL allows 65,535 parameters a statement; a row takes six. */
const maxRowsPerInsert = 1000;

/**
 * The store-then-ack entry of every receiver, with group commit: the accept()s of one turn of the
 * event loop go in one multi-row insert (unique by meaning, duplicates skipped), and while it is on
 * its way the next ones wait and go together in the next. A lone delivery is stored at once; a
 * burst costs a few round trips and commits, not one each. Each stored delivery is handed to
 * `stored` (which sends its job) before its receiver acks.
 */
export class GroupCommitInbox implements DeliveryInbox {
  readonly #store: PgInboundDeliveryStore;
  readonly #arrivals: ArrivalClock;
  readonly #stored: (id: string) => void;
  readonly #waiting: Waiting[] = [];
  #inserting = false;

  constructor(deps: { store: PgInboundDeliveryStore; arrivals: ArrivalClock; stored: (id: string) => void }) {
    this.#store = deps.store;
    this.#arrivals = deps.arrivals;
    this.#stored = deps.stored;
  }

  accept(delivery: ReceivedDelivery): Promise<'accepted' | 'duplicate'> {
    this.#arrivals.arrived();
    return new Promise((settle, fail) => {
      this.#waiting.push({ delivery, settle, fail });
      if (this.#inserting) return;
      this.#inserting = true;
      // After the requests read in this turn have joined the batch.
      setImmediate(() => void this.#insertAll());
    });
  }

  async #insertAll(): Promise<void> {
    try {
      while (this.#waiting.length > 0) await this.#insert(this.#waiting.splice(0, maxRowsPerInsert));
    } finally {
      this.#inserting = false;
    }
  }

  async #insert(taken: Waiting[]): Promise<void> {
    // Two deliveries of one meaning in the same batch: the first is stored, the second is a duplicate.
    const first = new Map<string, Waiting>();
    for (const entry of taken) {
      const key = meaningKey(entry.delivery);
      if (first.has(key)) entry.settle('duplicate');
      else first.set(key, entry);
    }
    const entries = [...first.values()];
    try {
      const ids = await this.#store.insertMarked(entries.map((entry) => entry.delivery));
      for (const entry of entries) {
        const id = ids.get(meaningKey(entry.delivery));
        if (id) this.#stored(id);
        entry.settle(id ? 'accepted' : 'duplicate');
      }
    } catch (error) {
      for (const entry of entries) entry.fail(error);
    }
  }
}
