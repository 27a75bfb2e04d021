import { sql, type Kysely } from 'kysely';

/**
 * Harness gates: the knowledge document per repository (built from the repo, and a person's edit
 * that wins over it), every check command run (a commit can be checked many times; history stays),
 * every verifier verdict, and the CI follow-ups started per pull request.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('repo_knowledge')
    .addColumn('repo', 'text', (c) => c.primaryKey())
    /** The default-branch commit the extracted document was built from. */
    .addColumn('built_from', 'text', (c) => c.notNull())
    .addColumn('extracted', 'jsonb', (c) => c.notNull())
    .addColumn('edited', 'jsonb')
    .addColumn('edited_by', 'text')
    .addColumn('edited_at', 'timestamptz')
    .addColumn('lessons', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('built_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('check_runs')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('commit_sha', 'text', (c) => c.notNull())
    .addColumn('phase', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('command', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('exit_code', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('log_head', 'text', (c) => c.notNull())
    .addColumn('log_tail', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .addColumn('finished_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('check_runs_session_commit')
    .on('check_runs')
    .columns(['session_id', 'commit_sha'])
    .execute();

  await db.schema
    .createTable('verdicts')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('session_id', 'text', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('commit_sha', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('verdict', 'jsonb')
    .addColumn('summary', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('verdicts_session_commit').on('verdicts').columns(['session_id', 'commit_sha']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['verdicts', 'check_runs', 'repo_knowledge']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
