import { sql, type Kysely } from 'kysely';

/**
 * GitHub: the App's installations and their repositories, webhook deliveries waiting to be worked
 * (the durable queue behind the fast acknowledgement), one row per request with the progress comment
 * it edits, and users' OAuth tokens (encrypted).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('github_installations')
    .addColumn('id', 'bigint', (c) => c.primaryKey())
    .addColumn('account_login', 'text', (c) => c.notNull())
    .addColumn('account_type', 'text', (c) => c.notNull())
    .addColumn('repository_selection', 'text', (c) => c.notNull())
    .addColumn('suspended', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('github_installation_repos')
    .addColumn('installation_id', 'bigint', (c) =>
      c.notNull().references('github_installations.id').onDelete('cascade'),
    )
    .addColumn('repo_id', 'bigint', (c) => c.notNull())
    .addColumn('full_name', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('github_installation_repos_pk', ['installation_id', 'repo_id'])
    .execute();
  await db.schema
    .createIndex('github_installation_repos_name')
    .on('github_installation_repos')
    .column('full_name')
    .execute();

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
  await db.schema
    .createIndex('github_webhook_deliveries_pending')
    .on('github_webhook_deliveries')
    .column('received_at')
    .where(sql.ref('processed_at'), 'is', null)
    .execute();

  await db.schema
    .createTable('github_requests')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.references('sessions.id').onDelete('cascade'))
    .addColumn('thread_key', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('repo', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    /** 'issue': the progress comment is an issue comment; 'review': a reply in a review thread. */
    .addColumn('comment_kind', 'text', (c) => c.notNull())
    .addColumn('comment_id', 'bigint')
    .addColumn('start_seq', 'integer', (c) => c.notNull())
    .addColumn('last_body', 'text')
    .addColumn('finished', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('github_requests_thread')
    .on('github_requests')
    .columns(['thread_key', 'finished'])
    .execute();

  await db.schema
    .createTable('github_user_tokens')
    .addColumn('actor_key', 'text', (c) => c.primaryKey())
    .addColumn('github_login', 'text', (c) => c.notNull())
    .addColumn('github_id', 'bigint', (c) => c.notNull())
    .addColumn('token_ciphertext', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of [
    'github_user_tokens',
    'github_requests',
    'github_webhook_deliveries',
    'github_installation_repos',
    'github_installations',
  ]) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
