import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('repo', 'text', (c) => c.notNull())
    .addColumn('prompt', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('requester', 'jsonb', (c) => c.notNull())
    .addColumn('base_branch', 'text')
    .addColumn('branch', 'text')
    .addColumn('last_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('pending_question', 'jsonb')
    .addColumn('result', 'jsonb')
    .addColumn('error', 'text')
    .addColumn('input_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('output_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_read_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('cache_write_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('sessions_created_at').on('sessions').column('created_at').execute();

  await db.schema
    .createTable('session_threads')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('thread_key', 'text')
    .addColumn('thread', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  // A shared thread belongs to one session at a time.
  await db.schema.createIndex('session_threads_key').on('session_threads').column('thread_key').unique().execute();
  await db.schema.createIndex('session_threads_session').on('session_threads').column('session_id').execute();

  await db.schema
    .createTable('session_events')
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('dedupe_key', 'text')
    .addPrimaryKeyConstraint('session_events_pk', ['session_id', 'seq'])
    .addUniqueConstraint('session_events_dedupe', ['session_id', 'dedupe_key'])
    .execute();

  await db.schema
    .createTable('session_messages')
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('idx', 'integer', (c) => c.notNull())
    .addColumn('message', 'jsonb', (c) => c.notNull())
    .addColumn('event_seq', 'integer')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('session_messages_pk', ['session_id', 'idx'])
    .execute();

  await db.schema
    .createTable('deliveries')
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('deliveries_pk', ['source', 'delivery_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['deliveries', 'session_messages', 'session_events', 'session_threads', 'sessions']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
