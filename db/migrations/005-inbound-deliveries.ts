import { sql, type Kysely } from 'kysely';

/**
 * One durable inbox for every surface: each verified webhook or event is stored here before it is
 * acknowledged, unique by what it means (source + dedupe key), then worked from the job queue.
 * Replaces GitHub's own delivery queue; its unworked rows move over.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('inbound_deliveries')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('dedupe_key', 'text', (c) => c.notNull())
    .addColumn('delivery_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    /** Set once the job queue has a job for it; a sweep enqueues rows left without one by a crash. */
    .addColumn('queued_at', 'timestamptz')
    /** 'pending' until worked; then 'done', 'ignored' (with the reason in outcome) or 'failed'. */
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('outcome', 'text')
    .addColumn('finished_at', 'timestamptz')
    .addUniqueConstraint('inbound_deliveries_meaning', ['source', 'dedupe_key'])
    .execute();
  await db.schema
    .createIndex('inbound_deliveries_unqueued')
    .on('inbound_deliveries')
    .column('received_at')
    .where(sql.ref('queued_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('inbound_deliveries_failed')
    .on('inbound_deliveries')
    .column('finished_at')
    .where(sql.ref('status'), '=', 'failed')
    .execute();
  await sql`
    insert into inbound_deliveries (source, dedupe_key, delivery_id, kind, body, received_at)
    select 'github', 'delivery:' || delivery_id, delivery_id, event, payload::text, received_at
    from github_webhook_deliveries where processed_at is null`.execute(db);
  await db.schema.dropTable('github_webhook_deliveries').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('github_webhook_deliveries')
    .addColumn('delivery_id', 'text', (c) => c.primaryKey())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('processed_at', 'timestamptz')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .execute();
  await db.schema.dropTable('inbound_deliveries').execute();
}
