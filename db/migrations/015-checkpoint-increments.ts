import { sql, type Kysely } from 'kysely';

/**
 * Checkpoints as chains. `session_checkpoints.bundle` holds the work since the base as of the
 * chain's last compaction, and `wip` the checkpoint commit the chain ends at;
 * `session_checkpoint_increments` holds each later checkpoint's bundle against the one before
 * (`parent`), so a step's checkpoint writes about what the step changed instead of all the work
 * again. A whole checkpoint stored again (a compaction) deletes the increments it replaces.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('session_checkpoints').addColumn('wip', 'text').execute();
  await db.schema
    .createTable('session_checkpoint_increments')
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('step', 'bigint', (c) => c.notNull())
    .addColumn('parent', 'text', (c) => c.notNull())
    .addColumn('wip', 'text', (c) => c.notNull())
    .addColumn('bundle', 'bytea', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('session_checkpoint_increments_pkey', ['session_id', 'step'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('session_checkpoint_increments').ifExists().execute();
  await db.schema.alterTable('session_checkpoints').dropColumn('wip').execute();
}
