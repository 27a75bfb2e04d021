import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../db/database.ts';
import { databaseUrl } from './template-database.ts';

/**
 * A server to make test databases on: `adminUrl` creates and drops them, `url`'s role uses them, and
 * each is a copy of `template` (migrated once per run by the global setup).
 */
export type DatabaseTarget = { name: string; url: string; adminUrl: string; template: string };

/** The embedded server: databases are made by its superuser and owned by the non-superuser app role. */
export function embeddedTarget(): DatabaseTarget {
  return {
    name: 'embedded',
    url: inject('embeddedDatabaseUrl'),
    adminUrl: inject('embeddedAdminUrl'),
    template: inject('embeddedTemplate'),
  };
}

/** The servers store tests run against: the embedded one always, DATABASE_URL's when set. */
export function databaseTargets(): DatabaseTarget[] {
  const targets = [embeddedTarget()];
  const external = inject('externalDatabaseUrl');
  if (external)
    targets.push({ name: 'DATABASE_URL', url: external, adminUrl: external, template: inject('externalTemplate') });
  return targets;
}

/**
 * A fresh, migrated database on the target server, owned by the target's app role, dropped again by
 * `close`: a copy of the run's template, so opening it finds every migration applied.
 */
export async function createTestDatabase(
  target: DatabaseTarget = embeddedTarget(),
): Promise<DatabaseHandle & { name: string; adminUrl: string }> {
  const name = `patchbay_test_${randomBytes(5).toString('hex')}`;
  const owner = decodeURIComponent(new URL(target.url).username);
  const admin = new pg.Client({ connectionString: target.adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${target.template} owner ${pg.escapeIdentifier(owner)}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(target.url, name);
  const handle = await openDatabase({ url, dataDir: '', log: pino({ level: 'silent' }), poolSize: 5 });
  return {
    ...handle,
    name,
    /** The server's setup role (superuser when embedded), for tests that change the database itself. */
    adminUrl: target.adminUrl,
    async close() {
      await handle.close();
      const cleanup = new pg.Client({ connectionString: target.adminUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}
