import { sql, type Kysely } from 'kysely';

/**
 * A session may have two Modal sandboxes: the agent's and the checks' own (`<session>-checks`, issue
 * 35), which never mounts the agent's workspace. Both are recorded under the session that owns them
 * (`session_id` keeps its foreign key, so a deleted session takes both rows), told apart by `role`,
 * so a worker that takes a run over reattaches to either and the reaper finds a checks sandbox that a
 * dead worker left behind.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('modal_sandboxes')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('agent').check(sql`role in ('agent', 'checks')`))
    .execute();
  await sql`alter table modal_sandboxes drop constraint modal_sandboxes_pkey`.execute(db);
  await sql`alter table modal_sandboxes add primary key (session_id, role)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from modal_sandboxes where role <> 'agent'`.execute(db);
  await sql`alter table modal_sandboxes drop constraint modal_sandboxes_pkey`.execute(db);
  await sql`alter table modal_sandboxes add primary key (session_id)`.execute(db);
  await db.schema.alterTable('modal_sandboxes').dropColumn('role').execute();
}
