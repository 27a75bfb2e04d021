import type { Kysely } from 'kysely';

/**
 * What a GitHub repository's plan refuses, learnt from GitHub's own answers: a private
 * repository on the Free or Pro plan refuses draft pull requests, so its PRs open ready and carry
 * "not verified yet" in their title and the `patchbay/verify` status instead. One row per
 * repository (owner/name in lower case), kept across restarts so no later PR asks again. And
 * where the look for webhook deliveries that never reached Patchbay resumes (GitHub never
 * redelivers by itself).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('github_repo_features')
    .addColumn('full_name', 'text', (c) => c.primaryKey())
    .addColumn('drafts', 'boolean', (c) => c.notNull())
    .addColumn('learnt_at', 'timestamptz', (c) => c.notNull())
    .execute();
  // Where the next look for webhook deliveries that never reached Patchbay starts (one row, 'app').
  await db.schema
    .createTable('github_delivery_sweep')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('since', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('github_delivery_sweep').ifExists().execute();
  await db.schema.dropTable('github_repo_features').ifExists().execute();
}
