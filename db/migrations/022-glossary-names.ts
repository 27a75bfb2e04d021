import { sql, type Kysely } from 'kysely';

/**
 * Names that match the glossary (docs/architecture.md): the dedupe markers a request writes in the
 * same transaction as what it changes are not deliveries (`deliveries` becomes `request_markers`,
 * its `delivery_id` the `dedupe_key`), and a thread's cursor counts the events replied to it
 * (`delivered_seq` becomes `replied_seq`). Renames only: no row is rewritten.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table deliveries rename to request_markers`.execute(db);
  await sql`alter table request_markers rename column delivery_id to dedupe_key`.execute(db);
  await sql`alter table request_markers rename constraint deliveries_pk to request_markers_pk`.execute(db);
  await sql`alter table session_threads rename column delivered_seq to replied_seq`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table session_threads rename column replied_seq to delivered_seq`.execute(db);
  await sql`alter table request_markers rename constraint request_markers_pk to deliveries_pk`.execute(db);
  await sql`alter table request_markers rename column dedupe_key to delivery_id`.execute(db);
  await sql`alter table request_markers rename to deliveries`.execute(db);
}
