import { sql, type Kysely } from 'kysely';

/**
 * Attachments arrive before their session may exist: a surface keeps the picture while it
 * interprets the delivery, keyed by where it came from (`slack:T1:F123`), and the session service
 * gives it its session when the message lands. The source key makes keeping it again (a retried
 * delivery) return the stored one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table session_artifacts alter column session_id drop not null`.execute(db);
  await db.schema.alterTable('session_artifacts').addColumn('source_key', 'text').execute();
  await sql`create unique index session_artifacts_source on session_artifacts (source_key)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index session_artifacts_source`.execute(db);
  await db.schema.alterTable('session_artifacts').dropColumn('source_key').execute();
  await sql`delete from session_artifacts where session_id is null`.execute(db);
  await sql`alter table session_artifacts alter column session_id set not null`.execute(db);
}
