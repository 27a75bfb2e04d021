import type { DeliveryInbox, ReceivedDelivery } from '../../core/delivery-interpreter.ts';
import { meaningKey, type InboundDeliveryStore } from './inbound-delivery-store.ts';

/**
 * When deliveries arrive, in bursts: deliveries that come less than `quietMs` apart, or while an
 * earlier one is still being stored, belong to one burst. While a burst is arriving its acks go
 * first: the jobs of its deliveries wait to be sent together, and workers wait before working them,
 * until the burst pauses or has gone on for the window they were given. Past that window it is steady traffic, and the work shares the machine
 * with the acks instead of waiting behind them, so no amount of traffic starves it.
 */
export class ArrivalClock {
  readonly #quietMs: number;
  #lastArrival = Number.NEGATIVE_INFINITY;
  #burstStart = Number.NEGATIVE_INFINITY;
  #storing = 0;

  /**
   * `quietMs`: the pause that ends a burst. Longer than the gaps of a burst on a busy machine (a
   * concurrent sender's requests a few milliseconds apart, stretched by the scheduler), short
   * enough that a lone delivery's job is sent without a noticeable wait.
   */
  constructor(quietMs = 20) {
    this.#quietMs = quietMs;
  }

  /**
   * A delivery arrived. With `stored`, the burst also goes on until that promise settles (its
   * insert, before its ack): a slow insert holds the sender's next requests back, and that gap is
   * the server's, not a pause of the burst.
   */
  arrived(stored?: Promise<unknown>): void {
    const now = performance.now();
    if (this.#storing === 0 && now - this.#lastArrival >= this.#quietMs) this.#burstStart = now;
    this.#lastArrival = now;
    if (!stored) return;
    this.#storing++;
    const done = () => {
      this.#storing--;
      this.#lastArrival = performance.now();
    };
    stored.then(done, done);
  }

  /** Resolves once no delivery has arrived for the quiet period, or the burst under way (or this wait) has lasted `windowMs`. */
  async paused(windowMs: number): Promise<void> {
    const start = performance.now();
    for (;;) {
      const now = performance.now();
      const quiet = this.#storing > 0 ? this.#quietMs : this.#quietMs - (now - this.#lastArrival);
      const burst = windowMs - (now - this.#burstStart);
      const wait = Math.min(quiet, burst, windowMs - (now - start));
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
 * `stored` (which sends its job) before its receiver acks. One insert at a time also keeps the ids
 * of one order key in the order they were stored (see InboundDeliveryStore.begin()); inserts
 * side by side in a few lanes measured slower in bench/webhook-ack.ts (smaller batches, more
 * statements).
 */
export class GroupCommitInbox implements DeliveryInbox {
  readonly #store: Pick<InboundDeliveryStore, 'insertMarked'>;
  readonly #arrivals: ArrivalClock;
  readonly #stored: (id: string) => void;
  readonly #waiting: Waiting[] = [];
  #inserting = false;

  constructor(deps: {
    store: Pick<InboundDeliveryStore, 'insertMarked'>;
    arrivals: ArrivalClock;
    stored: (id: string) => void;
  }) {
    this.#store = deps.store;
    this.#arrivals = deps.arrivals;
    this.#stored = deps.stored;
  }

  accept(delivery: ReceivedDelivery): Promise<'accepted' | 'duplicate'> {
    const stored = new Promise<'accepted' | 'duplicate'>((settle, fail) => {
      this.#waiting.push({ delivery, settle, fail });
      if (this.#inserting) return;
      this.#inserting = true;
      // After the requests read in this turn have joined the batch.
      setImmediate(() => void this.#insertAll());
    });
    this.#arrivals.arrived(stored);
    return stored;
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
