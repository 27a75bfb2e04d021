import { sql, type Kysely } from 'kysely';

/**
 * Outcomes of the pull requests sessions opened: merged or closed, when and by whom,
 * commits people pushed after Patchbay's last one, review rounds, a revert of the merge commit on
 * the default branch, and CI on the merge commit. One row per pull request (owner and repo in
 * lower case), written through the outcome ledger from GitHub's webhooks or a read of the PR.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('pull_outcomes')
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('repo', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('branch', 'text', (c) => c.notNull())
    .addColumn('base_branch', 'text', (c) => c.notNull())
    .addColumn('patchbay_commit', 'text', (c) => c.notNull())
    .addColumn('opened_at', 'timestamptz', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('open'))
    .addColumn('finished_at', 'timestamptz')
    .addColumn('finished_by', 'text')
    .addColumn('merge_commit', 'text')
    .addColumn('human_commits', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('review_ids', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('reverted_at', 'timestamptz')
    .addColumn('revert_commit', 'text')
    .addColumn('merge_ci', 'text')
    .addColumn('merge_ci_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('pull_outcomes_pkey', ['owner', 'repo', 'number'])
    .execute();
  await sql`create index pull_outcomes_session on pull_outcomes (session_id)`.execute(db);
  await sql`create index pull_outcomes_branch on pull_outcomes (owner, repo, branch)`.execute(db);
  await sql`create index pull_outcomes_merge on pull_outcomes (owner, repo, merge_commit) where merge_commit is not null`.execute(
    db,
  );
  // CI and reverts of default-branch commits, for a merge recorded after them (see CommitSignalsTable).
  await db.schema
    .createTable('commit_signals')
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('repo', 'text', (c) => c.notNull())
    .addColumn('commit', 'text', (c) => c.notNull())
    .addColumn('ci', 'text')
    .addColumn('ci_at', 'timestamptz')
    .addColumn('revert_commit', 'text')
    .addColumn('reverted_at', 'timestamptz')
    .addPrimaryKeyConstraint('commit_signals_pkey', ['owner', 'repo', 'commit'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('commit_signals').execute();
  await db.schema.dropTable('pull_outcomes').execute();
}
