import pg from 'pg';
import type { Logger } from 'pino';
import {
  EMBEDDED_APP_DATABASE,
  EMBEDDED_APP_ROLE,
  EMBEDDED_SUPERUSER,
  LEGACY_SUPERUSER_PASSWORD,
  type EmbeddedCredentials,
} from './embedded-credentials.ts';

type Target = { host: string; port: number };

/**
 * Brings a running embedded cluster to the least-privilege layout, idempotently:
 * - the superuser's password is the random one from the credentials file (a cluster made by an
 *   older Patchbay with the fixed password is switched over);
 * - the app role exists, can log in with its own password, and holds no superuser, role or
 *   database creation rights;
 * - the app database exists and the app role owns it and everything in it. An older cluster kept
 *   its data in the `postgres` database as the superuser: that database is renamed and handed over.
 * The superuser connection is used here only and closed before returning.
 */
export async function ensureLeastPrivilege(
  target: Target,
  credentials: EmbeddedCredentials,
  log: Logger,
): Promise<void> {
  const admin = await connectSuperuser(target, credentials, log);
  try {
    const role = quoteIdent(EMBEDDED_APP_ROLE);
    const exists = await admin.query('select 1 from pg_roles where rolname = $1', [EMBEDDED_APP_ROLE]);
    // The password is hex (checked when read), so it can be inlined as a literal: ALTER ROLE takes no parameters.
    const attributes = `login nosuperuser nocreatedb nocreaterole noreplication nobypassrls password '${credentials.appPassword}'`;
    await admin.query(exists.rowCount ? `alter role ${role} ${attributes}` : `create role ${role} ${attributes}`);

    const database = await admin.query('select 1 from pg_database where datname = $1', [EMBEDDED_APP_DATABASE]);
    if (!database.rowCount) {
      if (await hasLegacyData(target, credentials)) {
        log.info('moving the data of an older embedded database into its own database, owned by the app role');
        await admin.query(`alter database postgres rename to ${quoteIdent(EMBEDDED_APP_DATABASE)}`);
        await admin.query('create database postgres');
      } else {
        await admin.query(`create database ${quoteIdent(EMBEDDED_APP_DATABASE)} owner ${role}`);
      }
    }
    await admin.query(`alter database ${quoteIdent(EMBEDDED_APP_DATABASE)} owner to ${role}`);
    // The app role reaches its own database only.
    await admin.query('revoke connect on database postgres, template1 from public');
  } finally {
    await admin.end();
  }
  await handOverObjects(target, credentials);
}

/** Connects as the superuser (to template1, so `postgres` can be renamed), switching an older cluster from the fixed password to the random one. */
async function connectSuperuser(target: Target, credentials: EmbeddedCredentials, log: Logger): Promise<pg.Client> {
  try {
    return await connect(target, EMBEDDED_SUPERUSER, credentials.superuserPassword, 'template1');
  } catch (error) {
    if ((error as { code?: string }).code !== '28P01') throw error;
  }
  const legacy = await connect(target, EMBEDDED_SUPERUSER, LEGACY_SUPERUSER_PASSWORD, 'template1');
  log.warn(
    'the embedded PostgreSQL still had the fixed superuser password of older versions: replacing it with the random one in DATA_DIR',
  );
  await legacy.query(`alter role ${quoteIdent(EMBEDDED_SUPERUSER)} password '${credentials.superuserPassword}'`);
  return legacy;
}

async function hasLegacyData(target: Target, credentials: EmbeddedCredentials): Promise<boolean> {
  const client = await connect(target, EMBEDDED_SUPERUSER, credentials.superuserPassword, 'postgres');
  try {
    const found = await client.query("select 1 from pg_tables where tablename = 'kysely_migration'");
    return Boolean(found.rowCount);
  } finally {
    await client.end();
  }
}

/**
 * Everything in the app database that the superuser created (tables, sequences, schemas such as
 * pg-boss's, types, functions) is given to the app role. REASSIGN OWNED cannot do this: the
 * bootstrap superuser also owns the system catalogs.
 */
async function handOverObjects(target: Target, credentials: EmbeddedCredentials): Promise<void> {
  const client = await connect(target, EMBEDDED_SUPERUSER, credentials.superuserPassword, EMBEDDED_APP_DATABASE);
  try {
    await client.query(`
      do $$
      declare
        r record;
        su oid := (select oid from pg_roles where rolname = '${EMBEDDED_SUPERUSER}');
        app text := '${EMBEDDED_APP_ROLE}';
        user_ns oid[] := array(select oid from pg_namespace
          where nspname not in ('pg_catalog', 'information_schema') and nspname not like 'pg\\_toast%' and nspname not like 'pg\\_temp%');
      begin
        for r in select nspname from pg_namespace where oid = any(user_ns) and nspowner = su loop
          execute format('alter schema %I owner to %I', r.nspname, app);
        end loop;
        -- Tables first: that also moves the sequences their columns own.
        for r in select c.oid::regclass as name, c.relkind from pg_class c
                 where c.relnamespace = any(user_ns) and c.relowner = su and c.relkind in ('r', 'p', 'v', 'm', 'f') loop
          execute format('alter %s %s owner to %I',
            case r.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'f' then 'foreign table' else 'table' end, r.name, app);
        end loop;
        for r in select c.oid::regclass as name from pg_class c
                 where c.relnamespace = any(user_ns) and c.relowner = su and c.relkind = 'S' loop
          execute format('alter sequence %s owner to %I', r.name, app);
        end loop;
        for r in select t.oid::regtype as name from pg_type t
                 where t.typnamespace = any(user_ns) and t.typowner = su and t.typtype in ('e', 'd', 'r', 'c')
                   and (t.typrelid = 0 or (select relkind from pg_class where oid = t.typrelid) = 'c') loop
          execute format('alter type %s owner to %I', r.name, app);
        end loop;
        for r in select p.oid::regprocedure as name from pg_proc p where p.pronamespace = any(user_ns) and p.proowner = su loop
          execute format('alter routine %s owner to %I', r.name, app);
        end loop;
      end $$`);
  } finally {
    await client.end();
  }
}

async function connect(target: Target, user: string, password: string, database: string): Promise<pg.Client> {
  const client = new pg.Client({ host: target.host, port: target.port, user, password, database });
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
  return client;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
