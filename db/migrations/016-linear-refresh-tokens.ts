import type { Kysely } from 'kysely';

/**
 * Linear OAuth apps get short-lived access tokens (about a day) with a refresh token that rotates
 * on every use: an installation keeps its refresh token (encrypted, like the access token) and when
 * the access token expires. Rows installed before this have neither and are refreshed on Linear's
 * first refusal only if they can be (they cannot: their workspace is told to install again).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('linear_installations')
    .addColumn('refresh_token_ciphertext', 'text')
    .addColumn('expires_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('linear_installations')
    .dropColumn('refresh_token_ciphertext')
    .dropColumn('expires_at')
    .execute();
}
