import { sql, type Kysely } from 'kysely';

/**
 * Web page sessions kept on the server, so signing out ends one and each one expires
 * (WEB_SESSION_HOURS). The cookie holds a random id; the table keeps only its SHA-256, so a
 * read of the table does not sign anybody in. `key_digest` names the API token a session was
 * made under: changing the token signs everybody out.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('page_sessions')
    .addColumn('id_digest', 'text', (c) => c.primaryKey())
    .addColumn('who', 'text', (c) => c.notNull())
    .addColumn('key_digest', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('page_sessions_expires').on('page_sessions').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('page_sessions').execute();
}
