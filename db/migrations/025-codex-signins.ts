import { sql, type Kysely } from 'kysely';

/**
 * The installation's ChatGPT sign-in for Codex (docs/engines.md): one row, its tokens sealed with
 * PATCHBAY_SECRET_KEY like users' GitHub tokens. The relay refreshes it holding the row's lock; a
 * refresh OpenAI refused for good leaves the row with the reason until an operator signs in again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('codex_signins')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('access_token_ciphertext', 'text', (c) => c.notNull())
    .addColumn('refresh_token_ciphertext', 'text', (c) => c.notNull())
    .addColumn('id_token_ciphertext', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz')
    .addColumn('refused_reason', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('codex_signins').execute();
}
