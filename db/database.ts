import { Kysely, PostgresDialect } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import type { Logger } from 'pino';
import { PatchbayError } from '../src/core/errors.ts';
import { throttleLog } from '../src/core/log-throttle.ts';
import { startEmbeddedPostgres } from './embedded-postgres.ts';
import { migrationProvider } from './migrations/migration-list.ts';
import { renameRecordedMigrations } from './migrations/migration-names.ts';
import { preparingPool } from './prepared-statements.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

/**
 * What a store function takes after its database handle: the parameters of the store's member that
 * calls it (`createXStore(db)` returns `{ name: (...args: ArgsAfterDb<typeof name>) => name(db, ...args) }`).
 */
export type ArgsAfterDb<F> = F extends (db: never, ...args: infer A) => unknown ? A : never;

export type DatabaseHandle = {
  db: Db;
  pool: pg.Pool;
  /** Connection string, for other clients (the job queue, LISTEN). */
  url: string;
  /** True for the embedded database this process started: no other server process uses it. */
  exclusive: boolean;
  /** Resolves when the embedded database died and could not be started again (never for a DATABASE_URL). */
  lost: Promise<Error>;
  /**
   * Shutdown has begun (the rest of the process closes before the database): connection errors
   * from now on are expected, and an embedded database that dies is not started again.
   */
  beginClose(): void;
  close(): Promise<void>;
};

/** How long a connection may sit idle inside a transaction before PostgreSQL ends it (see openDatabase). */
export const IDLE_IN_TRANSACTION_MS = 10_000;

// Counters are bigint columns; they fit a JS number for any real session.
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * Opens the database: the server at `url`, or with no url a real PostgreSQL started from the
 * `embedded-postgres` package under `dataDir`. Runs migrations before returning.
 */
export async function openDatabase(options: {
  url?: string;
  dataDir: string;
  log: Logger;
  poolSize?: number;
  /** Called when the embedded database died and is serving again. */
  onRestarted?: () => void;
}): Promise<DatabaseHandle> {
  const embedded = options.url
    ? undefined
    : await startEmbeddedPostgres({
        dataDir: options.dataDir,
        log: options.log,
        ...(options.onRestarted && { onRestarted: options.onRestarted }),
      });
  const url = options.url ?? embedded!.url;
  const { pool, connections } = openPool(url, options.poolSize ?? 10, options.log);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
  try {
    await migrate(db);
    await warnIfSuperuser(pool, url, options.log);
  } catch (error) {
    await db.destroy();
    await embedded?.stop();
    throw new PatchbayError(
      'config_invalid',
      `database at ${redactUrl(url)} is not usable: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return {
    db,
    pool,
    url,
    exclusive: embedded !== undefined,
    lost: embedded?.lost ?? new Promise<Error>(() => undefined),
    beginClose() {
      connections.closing = true;
      embedded?.quiesce();
    },
    async close() {
      connections.closing = true;
      await db.destroy();
      const deadline = Date.now() + 5_000;
      while (connections.live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await embedded?.stop();
    },
  };
}

/** The pool's connections still open, and whether shutdown has begun (errors from then on are expected). */
type PoolConnections = { closing: boolean; live: Set<pg.PoolClient> };

/** The connection pool: its connection errors are logged (throttled) rather than crashing the process. */
function openPool(url: string, max: number, log: Logger): { pool: pg.Pool; connections: PoolConnections } {
  // A client that stops between the statements of a transaction (its process paused by SIGSTOP, a
  // long GC pause, a frozen VM) keeps its connection open and its row locks held: every other
  // worker's write to that session, a run take-over included, would wait for it for as long as it
  // is paused. PostgreSQL ends such a session after this long idle in a transaction, which frees
  // its locks; Patchbay's transactions are a few statements with no waiting between them.
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
  });
  const connections: PoolConnections = { closing: false, live: new Set() };
  const idleFailed = throttleLog((fields, message) => log.warn(fields, message));
  pool.on('error', (error) =>
    connections.closing ? undefined : idleFailed({ err: error }, 'idle database connection failed'),
  );
  // The pool listens for errors only on idle clients: one that dies while checked out (between the
  // statements of a transaction) would emit 'error' to nobody and crash the process. Its pending
  // and next statements fail on their own, so noting it is enough.
  //
  // At close, pg-pool's end() resolves once it has asked its clients to end, before their
  // connections are closed; stopping the embedded database right then terminates them (57P01) and
  // every clean shutdown logged a warning. So clients are counted until their connection is gone,
  // close() waits for that, and an error after close() began is expected and not worth a warning.
  pool.on('connect', (client) => {
    connections.live.add(client);
    client.on('end', () => connections.live.delete(client));
    client.on('error', (error) =>
      connections.closing
        ? log.debug({ err: error }, 'database connection ended during shutdown')
        : idleFailed({ err: error }, 'database connection failed'),
    );
  });
  pool.on('remove', (client) => connections.live.delete(client));
  return { pool, connections };
}

export async function migrate(db: Kysely<Database>): Promise<void> {
  await renameRecordedMigrations(db);
  // Migration numbers are handed out to parallel work, so one can land after a higher-numbered one
  // has already run somewhere: run it anyway instead of refusing.
  const migrator = new Migrator({ db, provider: migrationProvider, allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`migration ${failed?.migrationName ?? '?'} failed: ${(error as Error).message ?? String(error)}`);
  }
}

/**
 * A superuser can run programs on the database host (`COPY ... TO PROGRAM`), so anything that
 * gets Patchbay's connection gets that host. Say so once at start; docs/configuration.md shows the setup.
 */
async function warnIfSuperuser(pool: pg.Pool, url: string, log: Logger): Promise<void> {
  const { rows } = await pool.query<{ rolsuper: boolean }>(
    'select rolsuper from pg_roles where rolname = current_user',
  );
  if (rows[0]?.rolsuper) {
    log.warn(
      { database: redactUrl(url) },
      'DATABASE_URL connects as a superuser: give Patchbay a role that owns only its database (see docs/configuration.md, "Database")',
    );
  }
}

/** A connection string with its password removed, for logs and errors. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable url)';
  }
}
