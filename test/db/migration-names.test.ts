import { randomBytes } from 'node:crypto';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator, type Migration, type MigrationProvider } from 'kysely/migration';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate } from '../../db/database.ts';
import type { Database } from '../../db/schema.ts';
import { migrationProvider } from '../../db/migrations/migration-list.ts';
import { renamedMigrations } from '../../db/migrations/migration-names.ts';
import { asAdmin, databaseUrl, dropDatabase } from '../helpers/template-database.ts';
import { databaseTargets, type DatabaseTarget } from '../helpers/test-database.ts';

/** The migrations as a build before the renumbering listed them: the same steps, under their old names. */
const oldNames: MigrationProvider = {
  async getMigrations() {
    const oldOf = new Map([...renamedMigrations].map(([from, to]) => [to, from]));
    const all = await migrationProvider.getMigrations();
    return Object.fromEntries(Object.entries(all).map(([name, step]) => [oldOf.get(name) ?? name, step])) as Record<
      string,
      Migration
    >;
  },
};

type Recorded = { name: string; timestamp: string };

async function recorded(db: Kysely<Database>): Promise<Recorded[]> {
  const { rows } = await sql<Recorded>`select name, timestamp from kysely_migration order by name`.execute(db);
  return rows;
}

/**
 * The connections `pool` opens, and `closed()`: settles once each has closed. A pool's end resolves
 * before its connections are closed, and a database dropped under one still closing has the server
 * end it (57P01): an error on a pool that has ended, which no one is left to hear.
 */
function connectionsOf(pool: pg.Pool): { closed: () => Promise<void> } {
  const open = new Set<pg.PoolClient>();
  let drained = () => {};
  pool.on('connect', (client) => open.add(client));
  pool.on('remove', (client) => {
    open.delete(client);
    if (open.size === 0) drained();
  });
  return { closed: () => (open.size === 0 ? Promise.resolve() : new Promise((resolve) => (drained = resolve))) };
}

/**
 * Migrations 009 and 010 each existed twice; every migration from the second 009 on has the next
 * number now. A database an older build migrated records the old names, and Kysely refuses recorded
 * migrations it cannot find: opening it must rewrite them and run nothing twice.
 */
describe.each(databaseTargets())('renumbered migrations on $name PostgreSQL', (target) => {
  const opened: { db: Kysely<Database>; connections: { closed: () => Promise<void> }; name: string }[] = [];
  afterEach(async () => {
    for (const { db, connections, name } of opened.splice(0)) {
      await db.destroy();
      await connections.closed();
      await dropDatabase(target.adminUrl, name);
    }
  });

  /** An empty database owned by the target's app role, as `patchbay serve` first finds one. */
  async function emptyDatabase(server: DatabaseTarget): Promise<Kysely<Database>> {
    const name = `patchbay_renamed_${randomBytes(5).toString('hex')}`;
    const owner = decodeURIComponent(new URL(server.url).username);
    await asAdmin(server.adminUrl, `create database ${name} owner ${pg.escapeIdentifier(owner)}`);
    const pool = new pg.Pool({ connectionString: databaseUrl(server.url, name), max: 2 });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    opened.push({ db, connections: connectionsOf(pool), name });
    return db;
  }

  it('has each number once, in the order the migrations ran before', async () => {
    const names = Object.keys(await migrationProvider.getMigrations());
    const numbers = names.map((name) => name.slice(0, 3));
    expect(new Set(numbers).size).toBe(names.length);
    expect(Object.keys(await oldNames.getMigrations()).sort()).toEqual(
      names.map((name) => [...renamedMigrations].find(([, to]) => to === name)?.[0] ?? name),
    );
  });

  it('takes a database fully migrated under the old names: renames the records, runs nothing again', async () => {
    const db = await emptyDatabase(target);
    expect((await new Migrator({ db, provider: oldNames }).migrateToLatest()).error).toBeUndefined();
    const before = await recorded(db);
    expect(before.map((r) => r.name)).toContain('009-ordered-deliveries');

    await migrate(db);
    const after = await recorded(db);
    expect(after.map((r) => r.name)).toEqual(Object.keys(await migrationProvider.getMigrations()));
    // Same rows, same times: renamed, not run again.
    const renamed = before.map((r) => ({ ...r, name: renamedMigrations.get(r.name) ?? r.name }));
    expect(after).toEqual(renamed.sort((a, b) => a.name.localeCompare(b.name)));
    await migrate(db);
    expect(await recorded(db)).toEqual(after);
  });

  it('takes a database an older build migrated part of the way: renames what ran, runs the rest', async () => {
    const db = await emptyDatabase(target);
    expect((await new Migrator({ db, provider: oldNames }).migrateTo('011-scale-out')).error).toBeUndefined();

    await migrate(db);
    expect((await recorded(db)).map((r) => r.name)).toEqual(Object.keys(await migrationProvider.getMigrations()));
    // A table of a migration that ran only now (old 017-pull-outcomes, now 019) is there.
    const table = await sql<{ name: string | null }>`select to_regclass('pull_outcomes')::text as name`.execute(db);
    expect(table.rows[0]!.name).toBe('pull_outcomes');
  });
});
