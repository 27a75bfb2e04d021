import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationProvider } from '../../db/migrations/migration-list.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/** Migration 009 moves Linear's own delivery table into the inbound pipeline's. */
describe('migration 009: Linear deliveries move to inbound_deliveries', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.close();
  });

  it('keeps unworked rows pending, worked rows done and used-up rows failed, under the same keys', async () => {
    const migrator = new Migrator({ db: database.db, provider: migrationProvider });
    const back = await migrator.migrateTo('007-linear');
    expect(back.error).toBeUndefined();
    const body = (id: string) => JSON.stringify({ type: 'AgentSessionEvent', action: 'created', agentSession: { id } });
    await sql`
      insert into linear_webhook_deliveries (dedupe_key, delivery_id, event, payload, processed_at, attempts, last_error) values
        ('agent-session:a:created', 'd-1', 'AgentSessionEvent', ${body('a')}::jsonb, null, 1, 'Linear was down'),
        ('agent-session:b:created', 'd-2', 'AgentSessionEvent', ${body('b')}::jsonb, now(), 1, null),
        ('agent-activity:c', null, 'AgentSessionEvent', ${body('c')}::jsonb, null, 5, 'the session store is down')`.execute(
      database.db,
    );

    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    const rows = await database.db
      .selectFrom('inbound_deliveries')
      .selectAll()
      .where('source', '=', 'linear')
      .orderBy('dedupe_key')
      .execute();
    expect(
      rows.map((r) => [r.dedupe_key, r.delivery_id, r.kind, r.status, r.attempts, r.last_error, r.queued_at !== null]),
    ).toEqual([
      ['agent-activity:c', null, 'AgentSessionEvent', 'failed', 5, 'the session store is down', true],
      ['agent-session:a:created', 'd-1', 'AgentSessionEvent', 'pending', 1, 'Linear was down', false],
      ['agent-session:b:created', 'd-2', 'AgentSessionEvent', 'done', 1, null, true],
    ]);
    expect(JSON.parse(rows[1]!.body)).toEqual(JSON.parse(body('a')));
    const table = await sql<{
      name: string | null;
    }>`select to_regclass('linear_webhook_deliveries')::text as name`.execute(database.db);
    expect(table.rows[0]!.name).toBeNull();
  });
});
