import type { Kysely } from 'kysely';

/** Per-thread delivery cursor and integration state (the status message to edit, and so on). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('session_threads')
    .addColumn('delivered_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('state', 'jsonb')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('session_threads').dropColumn('delivered_seq').dropColumn('state').execute();
}
