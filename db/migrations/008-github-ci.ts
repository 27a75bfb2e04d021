import { sql, type Kysely } from 'kysely';

/**
 * GitHub CI follow-up: one row per failing head commit of a pull request a session opened (the
 * first delivery that reports the failure claims it, so the check run, check suite and workflow run
 * events of one failure start at most one follow-up), with the decision and the failure's signature
 * (to stop when the same failure repeats); and the per-pull-request `@bot autofix off|on` switch.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('github_ci_failures')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('repo', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('head_sha', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    /** The delivery that claimed the row: its own retry may go on, others stop. */
    .addColumn('claimed_by', 'text', (c) => c.notNull())
    /** Null until decided. */
    .addColumn('follow_up', 'boolean')
    .addColumn('names', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('signature', 'text')
    .addColumn('reason', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('github_ci_failures_head', ['owner', 'repo', 'number', 'head_sha'])
    .execute();

  await db.schema
    .createTable('github_pull_autofix')
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('repo', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('enabled', 'boolean', (c) => c.notNull())
    .addColumn('set_by', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('github_pull_autofix_pk', ['owner', 'repo', 'number'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('github_pull_autofix').ifExists().execute();
  await db.schema.dropTable('github_ci_failures').ifExists().execute();
}
