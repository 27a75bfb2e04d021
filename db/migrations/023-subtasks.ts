import { sql, type Kysely } from 'kysely';

/**
 * Sub-tasks: a child session knows its parent, its place in the parent's list, its
 * title and the spawn_subtasks call that asked for it. The unique key on (parent, call, index)
 * makes a replayed call (a run resumed after a crash) find the children it created instead of
 * creating them again; the index on the parent serves "the children of this session".
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('parent_session_id', 'text', (c) => c.references('sessions.id'))
    .addColumn('subtask_index', 'integer')
    .addColumn('subtask_title', 'text')
    .addColumn('spawn_call_id', 'text')
    .execute();
  await sql`alter table sessions add constraint sessions_subtask_unique unique (parent_session_id, spawn_call_id, subtask_index)`.execute(
    db,
  );
  await sql`alter table sessions add constraint sessions_subtask_complete check ((parent_session_id is null) = (spawn_call_id is null) and (parent_session_id is null) = (subtask_index is null))`.execute(
    db,
  );
  await sql`create index sessions_parent on sessions (parent_session_id) where parent_session_id is not null`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists sessions_parent`.execute(db);
  await sql`alter table sessions drop constraint if exists sessions_subtask_complete`.execute(db);
  await sql`alter table sessions drop constraint if exists sessions_subtask_unique`.execute(db);
  await db.schema
    .alterTable('sessions')
    .dropColumn('spawn_call_id')
    .dropColumn('subtask_title')
    .dropColumn('subtask_index')
    .dropColumn('parent_session_id')
    .execute();
}
