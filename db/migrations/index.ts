import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m001 from './001-sessions.ts';

/** Migrations in order. Add new ones here; never edit one that has shipped. */
export const migrationProvider: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    return { '001-sessions': m001 };
  },
};
