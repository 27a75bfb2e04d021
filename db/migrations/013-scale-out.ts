import { sql, type Kysely } from 'kysely';

/**
 * Scale-out. `session_checkpoints`: the latest checkpoint of a session's work (a git bundle of the
 * workspace against its base, taken after every file-changing step), so a run resumed by another
 * worker, on another host, starts from the work the transcript says was done. One row per session;
 * `step` only grows, so a worker that lost its run cannot overwrite a newer checkpoint with an
 * older one. A row with no bundle says why the work could not be checkpointed (`unavailable`).
 *
 * `sessions.queued_at`: when the session last became queued (kept by a trigger, whatever writes
 * the status), the order in which waiting sessions start and how their place in line is counted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('session_checkpoints')
    .addColumn('session_id', 'text', (c) => c.primaryKey().references('sessions.id').onDelete('cascade'))
    .addColumn('step', 'bigint', (c) => c.notNull())
    .addColumn('head', 'text', (c) => c.notNull())
    .addColumn('tree', 'text', (c) => c.notNull())
    .addColumn('branch', 'text', (c) => c.notNull())
    .addColumn('base_branch', 'text', (c) => c.notNull())
    .addColumn('base_commit', 'text', (c) => c.notNull())
    .addColumn('bundle', 'bytea')
    .addColumn('unavailable', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.alterTable('sessions').addColumn('queued_at', 'timestamptz').execute();
  await sql`update sessions set queued_at = updated_at where status = 'queued'`.execute(db);
  await sql`
    create function patchbay_sessions_queued_at() returns trigger language plpgsql as $$
    begin
      if new.status = 'queued' and (tg_op = 'INSERT' or old.status is distinct from 'queued') then
        new.queued_at := now();
      end if;
      return new;
    end $$`.execute(db);
  await sql`
    create trigger sessions_queued_at before insert or update of status on sessions
    for each row execute function patchbay_sessions_queued_at()`.execute(db);
  await sql`create index sessions_queued on sessions (queued_at) where status = 'queued'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger if exists sessions_queued_at on sessions`.execute(db);
  await sql`drop function if exists patchbay_sessions_queued_at()`.execute(db);
  await sql`drop index if exists sessions_queued`.execute(db);
  await db.schema.alterTable('sessions').dropColumn('queued_at').execute();
  await db.schema.dropTable('session_checkpoints').ifExists().execute();
}
