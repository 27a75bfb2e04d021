import { sql, type Kysely } from 'kysely';

/**
 * Linear: webhook deliveries waiting to be worked (the durable queue behind the fast
 * acknowledgement, keyed by what the delivery means so a redelivery is dropped), the agent sessions
 * Linear opened for Patchbay (with the task waiting for a repository when it had to ask), and the
 * workspaces the app was installed in through OAuth (app user id, encrypted token).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
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

  await db.schema
    .createTable('linear_agent_sessions')
    .addColumn('agent_session_id', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'text', (c) => c.notNull())
    .addColumn('issue_id', 'text', (c) => c.notNull())
    .addColumn('issue_identifier', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.references('sessions.id').onDelete('set null'))
    /** The task while Patchbay waits for the person to name a repository: {text, actor, candidates}. */
    .addColumn('pending', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('linear_agent_sessions_session')
    .on('linear_agent_sessions')
    .column('session_id')
    .execute();

  await db.schema
    .createTable('linear_installations')
    .addColumn('organization_id', 'text', (c) => c.primaryKey())
    .addColumn('app_user_id', 'text', (c) => c.notNull())
    .addColumn('token_ciphertext', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['linear_installations', 'linear_agent_sessions', 'linear_webhook_deliveries']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
