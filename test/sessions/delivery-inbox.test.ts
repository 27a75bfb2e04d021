import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ReceivedDelivery } from '../../src/core/delivery-interpreter.ts';
import { ArrivalClock, GroupCommitInbox } from '../../src/sessions/inbound/delivery-inbox.ts';
import { meaningKey } from '../../src/sessions/inbound/inbound-delivery-store.ts';

/**
 * The inbox's group commit without a database: a store whose inserts stay under way until the
 * test lets them finish, so what is inserted together, and what waits for what, can be seen.
 */
function slowStore() {
  const inserts: { bodies: string[]; finish: () => void }[] = [];
  let nextId = 1;
  return {
    inserts,
    store: {
      insertMarked(deliveries: readonly ReceivedDelivery[]): Promise<Map<string, string>> {
        return new Promise((resolve) => {
          inserts.push({
            bodies: deliveries.map((d) => d.body),
            finish: () => resolve(new Map(deliveries.map((d) => [meaningKey(d), String(nextId++)]))),
          });
        });
      },
    },
  };
}

const delivery = (body: string, orderKey?: string): ReceivedDelivery => ({
  source: 'test',
  dedupeKey: body,
  kind: 'event',
  body,
  ...(orderKey && { orderKey }),
});
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('GroupCommitInbox', () => {
  it('stores the deliveries of one order key one batch after another, in the order they came', async () => {
    const { store, inserts } = slowStore();
    const stored: string[] = [];
    const inbox = new GroupCommitInbox({ store, arrivals: new ArrivalClock(), stored: (id) => stored.push(id) });
    const first = [inbox.accept(delivery('k-1', 'k')), inbox.accept(delivery('k-2', 'k'))];
    await turn();
    expect(inserts.map((i) => i.bodies)).toEqual([['k-1', 'k-2']]);
    // Arriving while the first batch is under way: waits for it, in the same lane.
    const later = inbox.accept(delivery('k-3', 'k'));
    await turn();
    expect(inserts).toHaveLength(1);
    inserts[0]!.finish();
    expect(await Promise.all(first)).toEqual(['accepted', 'accepted']);
    await turn();
    expect(inserts.map((i) => i.bodies)).toEqual([['k-1', 'k-2'], ['k-3']]);
    inserts[1]!.finish();
    expect(await later).toBe('accepted');
    expect(stored).toEqual(['1', '2', '3']);
  });

  it('stores a burst in one insert, and a meaning twice in it once', async () => {
    const { store, inserts } = slowStore();
    const inbox = new GroupCommitInbox({ store, arrivals: new ArrivalClock(), stored: () => undefined });
    const keys = Array.from({ length: 16 }, (_, i) => `key-${i}`);
    const accepted = keys.map((key) => inbox.accept(delivery(key, key)));
    const again = inbox.accept(delivery('key-0', 'key-0'));
    await turn();
    expect(inserts.map((i) => i.bodies)).toEqual([keys]);
    inserts[0]!.finish();
    expect(await Promise.all(accepted)).toEqual(keys.map(() => 'accepted'));
    expect(await again).toBe('duplicate');
  });
  it('keeps the burst going while its insert is under way', async () => {
    const { store, inserts } = slowStore();
    const arrivals = new ArrivalClock(20);
    const inbox = new GroupCommitInbox({ store, arrivals, stored: () => undefined });
    const accepted = inbox.accept(delivery('slow'));
    await turn();
    await new Promise((resolve) => setTimeout(resolve, 40));
    let paused = false;
    const wait = arrivals.paused(10_000).then(() => {
      paused = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(paused).toBe(false);
    inserts[0]!.finish();
    expect(await accepted).toBe('accepted');
    await wait;
    expect(paused).toBe(true);
  });
});

describe('ArrivalClock', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Whether `wait` has resolved after `ms` more milliseconds. */
  async function resolvedAfter(wait: Promise<void>, ms: number, state = { done: false }) {
    void wait.then(() => {
      state.done = true;
    });
    await vi.advanceTimersByTimeAsync(ms);
    return state;
  }

  it('holds work back while a burst arrives, until it pauses', async () => {
    const clock = new ArrivalClock(20);
    expect((await resolvedAfter(clock.paused(1000), 0)).done).toBe(true);
    clock.arrived();
    const wait = clock.paused(1000);
    const state = await resolvedAfter(wait, 15);
    expect(state.done).toBe(false);
    await vi.advanceTimersByTimeAsync(10);
    expect(state.done).toBe(true);
  });

  it('counts a delivery being stored as part of its burst, and the quiet period from its ack', async () => {
    const clock = new ArrivalClock(20);
    let stored!: () => void;
    clock.arrived(new Promise<void>((resolve) => (stored = resolve)));
    const state = await resolvedAfter(clock.paused(1000), 50);
    // No delivery arrived for 50 ms, but the one before is still being stored: the server is slow, the burst goes on.
    expect(state.done).toBe(false);
    stored();
    await vi.advanceTimersByTimeAsync(15);
    expect(state.done).toBe(false);
    await vi.advanceTimersByTimeAsync(10);
    expect(state.done).toBe(true);
  });

  it('holds work back for at most the window while a store never ends', async () => {
    const clock = new ArrivalClock(20);
    clock.arrived(new Promise<void>(() => undefined));
    const state = await resolvedAfter(clock.paused(100), 90);
    expect(state.done).toBe(false);
    await vi.advanceTimersByTimeAsync(15);
    expect(state.done).toBe(true);
  });

  it('holds it back for at most the window of a burst that goes on, then not at all', async () => {
    const clock = new ArrivalClock(20);
    clock.arrived();
    const steady = setInterval(() => clock.arrived(), 5);
    try {
      const state = await resolvedAfter(clock.paused(100), 90);
      expect(state.done).toBe(false);
      await vi.advanceTimersByTimeAsync(15);
      expect(state.done).toBe(true);
      // The same burst, past its window: steady traffic, worked alongside its acks.
      expect((await resolvedAfter(clock.paused(100), 0)).done).toBe(true);
    } finally {
      clearInterval(steady);
    }
  });
});
