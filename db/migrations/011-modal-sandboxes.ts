import { sql, type Kysely } from 'kysely';

/**
 * Modal sandboxes (SANDBOX=modal): per session, the live sandbox's id and its newest filesystem
 * snapshot, so any worker on any host can reattach to it by id or continue from the snapshot.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('modal_sandboxes')
    .addColumn('session_id', 'text', (c) => c.primaryKey().references('sessions.id').onDelete('cascade'))
    .addColumn('sandbox_id', 'text')
    .addColumn('image_id', 'text')
    .addColumn('snapshot_at', 'timestamptz')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('used_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    /** False while a run holds the sandbox; true once it let go after a snapshot. */
    .addColumn('released', 'boolean', (c) => c.notNull().defaultTo(true))
    .execute();
  await db.schema.createIndex('modal_sandboxes_sandbox').on('modal_sandboxes').column('sandbox_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('modal_sandboxes').ifExists().execute();
}
