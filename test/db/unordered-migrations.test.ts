import { sql } from 'kysely';
import { Migrator, type Migration, type MigrationProvider } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../db/database.ts';
import { migrationProvider } from '../../db/migrations/migration-list.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * Migration numbers go to parallel work, so a migration can land after a higher-numbered one already
 * ran on some database (010-modal-templates, now 012, after 011-scale-out, now 013). Starting Patchbay
 * must still run it.
 */
describe('a migration that lands after a higher-numbered one ran', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.close();
  });

  it('is run at the next start', async () => {
    const all = await migrationProvider.getMigrations();
    expect(Object.keys(all)).toContain('012-modal-templates');
    expect(Object.keys(all).some((name) => name > '012-modal-templates')).toBe(true);
    // Back to before 012-modal-templates, then forward without it, as a database migrated by an
    // older build that already had the later migrations.
    expect(
      (await new Migrator({ db: database.db, provider: migrationProvider }).migrateTo('011-modal-sandboxes')).error,
    ).toBeUndefined();
    const without: MigrationProvider = {
      getMigrations: async () =>
        Object.fromEntries(Object.entries(all).filter(([name]) => name !== '012-modal-templates')) as Record<
          string,
          Migration
        >,
    };
    expect((await new Migrator({ db: database.db, provider: without }).migrateToLatest()).error).toBeUndefined();
    const exists = async () =>
      (await sql<{ name: string | null }>`select to_regclass('modal_templates')::text as name`.execute(database.db))
        .rows[0]!.name;
    expect(await exists()).toBeNull();

    await migrate(database.db);
    expect(await exists()).toBe('modal_templates');
  });
});
