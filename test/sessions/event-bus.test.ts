import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createEventBus, type EventBus, type EventNotice } from '../../src/sessions/event-bus.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/session-store.ts';
import { waitFor } from '../helpers/patchbay-fixture.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const log = pino({ level: 'silent' });

describe('event bus', () => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  let bus: EventBus | undefined;
  let admin: pg.Client;
  const allowConnections = (allow: boolean) => admin.query(`alter database ${handle.name} allow_connections ${allow}`);

  beforeAll(async () => {
    handle = await createTestDatabase();
    store = createSessionStore(handle.db);
    admin = new pg.Client({ connectionString: handle.adminUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await bus?.close();
    await allowConnections(true);
    await admin.end();
    await handle.close();
  });

  it('keeps reconnecting while the database refuses connections, then delivers notices again', { timeout: 30_000 }, async () => {
    await store.create({ id: 's-bus', repo: 'r', prompt: 'p', title: 't', requester: { source: 'web', id: 'a', name: 'A' }, thread: { source: 'web' } });
    // Hold a connection of the store's pool across the outage, for the writes after it.
    await sql`select 1`.execute(handle.db);
    bus = await createEventBus({ url: handle.url, log, reconnectMs: 100 });
    const seen: EventNotice[] = [];
    bus.subscribe('s-bus', (notice) => seen.push(notice));

    await allowConnections(false);
    await sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen%'`.execute(handle.db);
    // Several reconnect attempts fail meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 800));
    await allowConnections(true);

    await waitFor(async () => {
      await store.append('s-bus', [{ event: { type: 'error', code: 'x', message: 'ping' } }]);
      return seen.length > 0;
    }, 'a notice after the outage', 10_000);
    expect(seen[0]).toMatchObject({ sessionId: 's-bus', type: 'error' });
  });
});
