import { sql, type Kysely } from 'kysely';

/**
 * Modal setup images (SANDBOX=modal): per repository, the newest snapshot of a sandbox taken right
 * after the repository's setup ran, and the base commit it was checked out at, so a new session
 * starts from it and fetches only what is new.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('modal_templates')
    .addColumn('repo', 'text', (c) => c.primaryKey())
    .addColumn('image_id', 'text', (c) => c.notNull())
    .addColumn('base_commit', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('modal_templates').ifExists().execute();
}
