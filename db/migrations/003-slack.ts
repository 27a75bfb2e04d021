import { sql, type Kysely } from 'kysely';

/**
 * Slack's own tables: tasks waiting for a repository (keyed by thread), and the messages already
 * posted in a thread, so a repeated delivery edits instead of posting twice.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('slack_pending_tasks')
    .addColumn('thread_key', 'text', (c) => c.primaryKey())
    .addColumn('thread', 'jsonb', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('actor', 'jsonb', (c) => c.notNull())
    .addColumn('candidates', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('slack_posts')
    .addColumn('thread_key', 'text', (c) => c.notNull())
    .addColumn('post_key', 'text', (c) => c.notNull())
    .addColumn('ts', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('slack_posts_pk', ['thread_key', 'post_key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('slack_posts').execute();
  await db.schema.dropTable('slack_pending_tasks').execute();
}
