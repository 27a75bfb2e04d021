import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceivedDelivery } from '../../src/core/delivery-interpreter.ts';
import {
  createInboundDeliveryStore,
  type InboundDeliveryStore,
  meaningKey,
} from '../../src/sessions/inbound/inbound-delivery-store.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * The one race of per-key ordering, against real PostgreSQL: a later delivery's begin() decides to
 * park while the earlier one's finish() ends it. Whatever the timing, either the later one is
 * worked (the earlier one had ended) or it is parked and that finish() hands it back to be sent
 * on; never parked with nobody to send it.
 */
describe('InboundDeliveryStore ordering race', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: InboundDeliveryStore;
  let holder: pg.Client;
  let round = 0;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createInboundDeliveryStore(database.db);
    holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
  }, 60_000);
  afterAll(async () => {
    await holder?.end();
    await database?.close();
  });

  /** An earlier and a later delivery of a fresh order key, the earlier one's attempt begun. */
  async function twoOfOneKey() {
    round += 1;
    const delivery = (body: string): ReceivedDelivery => ({
      source: 'test',
      dedupeKey: `${body}-${round}`,
      kind: 'event',
      body,
      orderKey: `key-${round}`,
    });
    const [first, second] = [delivery('first'), delivery('second')];
    const ids = await store.insertMarked([first, second]);
    const earlier = { id: ids.get(meaningKey(first))!, orderKey: first.orderKey! };
    const later = ids.get(meaningKey(second))!;
    expect(await store.begin(earlier.id)).toMatchObject({ id: earlier.id, attempt: 1 });
    return { earlier, later };
  }

  /** Statements of this database waiting for a lock. */
  async function lockWaiters(): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(database.db);
    return rows[0]!.n;
  }

  it('parks the later delivery while the earlier one is pending, and works it once that one has ended', async () => {
    const { earlier, later } = await twoOfOneKey();
    expect(await store.begin(later)).toBe('parked');
    expect(await store.finish(earlier, 'done', 'worked')).toBe(later);
    expect(await store.begin(later)).toMatchObject({ id: later, attempt: 1 });

    const next = await twoOfOneKey();
    expect(await store.finish(next.earlier, 'done', 'worked')).toBeUndefined();
    expect(await store.begin(next.later)).toMatchObject({ id: next.later, attempt: 1 });
  });

  it('hands the later delivery back when its park is committed after the earlier one was seen pending', async () => {
    const { earlier, later } = await twoOfOneKey();
    // Holds the later row, so its begin() has seen the earlier one pending but cannot commit its park yet.
    await holder.query('begin');
    await holder.query('select id from inbound_deliveries where id = $1 for update', [Number(later)]);
    const begun = store.begin(later);
    await waitFor(async () => (await lockWaiters()) === 1, 'begin() waits for the held row', 10_000);
    const finished = store.finish(earlier, 'done', 'worked');
    // The finish must not decide before that park is committed: it waits too, or it would miss it.
    let decided = false;
    const decide = () => {
      decided = true;
    };
    finished.then(decide, decide);
    await waitFor(async () => decided || (await lockWaiters()) === 2, 'finish() decides or waits', 10_000);
    const decidedEarly = decided;
    await holder.query('commit');
    expect(await begun).toBe('parked');
    expect(await finished).toBe(later);
    expect(decidedEarly).toBe(false);
  });

  it('works the later delivery when the earlier one ended while its begin() waited', async () => {
    const { earlier, later } = await twoOfOneKey();
    // Holds the earlier row, as its finish() does while it ends it.
    await holder.query('begin');
    await holder.query(`update inbound_deliveries set status = 'done', finished_at = now() where id = $1`, [
      Number(earlier.id),
    ]);
    const begun = store.begin(later);
    await waitFor(async () => (await lockWaiters()) === 1, 'begin() waits for the earlier row', 10_000);
    await holder.query('commit');
    expect(await begun).toMatchObject({ id: later, attempt: 1 });
  });
});
