import { sql, type Kysely } from 'kysely';

/**
 * Run leases. A run of a session holds a lease in the database, not on a connection: `run_epoch`
 * grows by one each time a worker starts or takes over a run, `lease_owner` names the process and
 * `lease_expires_at` is when others may take it over unless it is renewed. A worker that is paused
 * (SIGSTOP, a long GC pause, a frozen VM) keeps its connections open but stops renewing, so its
 * runs are taken over once the lease lapses. Every write of a run is conditional on its epoch; the
 * rows it writes keep the epoch that wrote them (`run_epoch` on events, checkpoints, checkpoint
 * increments and sandbox records), so who wrote what can be checked afterwards. Live leases are
 * also the run slots of MAX_RUNNING_SESSIONS: they survive a dropped connection and lapse on their own.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('run_epoch', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'timestamptz')
    .execute();
  await sql`create index sessions_leased on sessions (lease_expires_at) where lease_expires_at is not null`.execute(db);
  await db.schema.alterTable('session_events').addColumn('run_epoch', 'bigint').execute();
  await db.schema.alterTable('session_checkpoints').addColumn('run_epoch', 'bigint').execute();
  await db.schema.alterTable('session_checkpoint_increments').addColumn('run_epoch', 'bigint').execute();
  await db.schema.alterTable('modal_sandboxes').addColumn('run_epoch', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('modal_sandboxes').dropColumn('run_epoch').execute();
  await db.schema.alterTable('session_checkpoint_increments').dropColumn('run_epoch').execute();
  await db.schema.alterTable('session_checkpoints').dropColumn('run_epoch').execute();
  await db.schema.alterTable('session_events').dropColumn('run_epoch').execute();
  await sql`drop index if exists sessions_leased`.execute(db);
  await db.schema
    .alterTable('sessions')
    .dropColumn('lease_expires_at')
    .dropColumn('lease_owner')
    .dropColumn('run_epoch')
    .execute();
}
