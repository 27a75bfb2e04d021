import { sql, type Kysely } from 'kysely';

/**
 * Linear's webhooks go through the one inbound pipeline (inbound_deliveries) like Slack's and
 * GitHub's. Its own delivery table moves over under the same dedupe keys: unworked rows to be
 * worked, worked rows as done (so a late redelivery is still recognised), rows that used up the
 * old worker's five tries as failed. Then the old table goes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    insert into inbound_deliveries (source, dedupe_key, delivery_id, kind, body, received_at, attempts, last_error, status, outcome, finished_at)
    select 'linear', dedupe_key, delivery_id, event, payload::text, received_at, attempts, last_error,
      case when processed_at is not null then 'done' when attempts >= 5 then 'failed' else 'pending' end,
      case when processed_at is not null then 'worked before the move to the inbound pipeline' when attempts >= 5 then 'gave up' else null end,
      case when processed_at is not null then processed_at when attempts >= 5 then received_at else null end
    from linear_webhook_deliveries
    on conflict (source, dedupe_key) do nothing`.execute(db);
  // Rows already worked or given up need no job; the pipeline's sweep queues the pending ones.
  await sql`update inbound_deliveries set queued_at = now() where source = 'linear' and status <> 'pending' and queued_at is null`.execute(
    db,
  );
  await db.schema.dropTable('linear_webhook_deliveries').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('linear_webhook_deliveries')
    .addColumn('dedupe_key', 'text', (c) => c.primaryKey())
    .addColumn('delivery_id', 'text')
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('processed_at', 'timestamptz')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .execute();
  await db.schema
    .createIndex('linear_webhook_deliveries_pending')
    .on('linear_webhook_deliveries')
    .column('received_at')
    .where(sql.ref('processed_at'), 'is', null)
    .execute();
  await sql`
    insert into linear_webhook_deliveries (dedupe_key, delivery_id, event, payload, received_at, processed_at, attempts, last_error)
    select dedupe_key, delivery_id, kind, body::jsonb, received_at, case when status = 'pending' then null else coalesce(finished_at, now()) end, attempts, last_error
    from inbound_deliveries where source = 'linear'`.execute(db);
  await sql`delete from inbound_deliveries where source = 'linear'`.execute(db);
}
