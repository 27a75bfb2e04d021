import type { Kysely } from 'kysely';

/**
 * What a GitHub repository's plan refuses, learnt from GitHub's own answers (issue 34): a private
 * repository on the Free or Pro plan refuses draft pull requests, so its PRs open ready and carry
 * "not verified yet" in their title and the `patchbay/verify` status instead. One row per
 * repository (owner/name in lower case), kept across restarts so no later PR asks again.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('github_repo_features')
    .addColumn('full_name', 'text', (c) => c.primaryKey())
    .addColumn('drafts', 'boolean', (c) => c.notNull())
    .addColumn('learnt_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('github_repo_features').ifExists().execute();
}
