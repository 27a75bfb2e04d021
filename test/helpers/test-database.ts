import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../db/database.ts';

/** A server to make test databases on: `adminUrl` creates and drops them, `url`'s role uses them. */
export type DatabaseTarget = { name: string; url: string; adminUrl: string };

/** The embedded server: databases are made by its superuser and owned by the non-superuser app role. */
export function embeddedTarget(): DatabaseTarget {
  return { name: 'embedded', url: inject('embeddedDatabaseUrl'), adminUrl: inject('embeddedAdminUrl') };
}

/** The servers store tests run against: the embedded one always, DATABASE_URL's when set. */
export function databaseTargets(): DatabaseTarget[] {
  const targets = [embeddedTarget()];
  const external = inject('externalDatabaseUrl');
  if (external) targets.push({ name: 'DATABASE_URL', url: external, adminUrl: external });
  return targets;
}

/** A fresh, migrated database on the target server, owned by the target's app role, dropped again by `close`. */
export async function createTestDatabase(
  target: DatabaseTarget = embeddedTarget(),
): Promise<DatabaseHandle & { name: string; adminUrl: string }> {
  const name = `patchbay_test_${randomBytes(5).toString('hex')}`;
  const owner = decodeURIComponent(new URL(target.url).username);
  const admin = new pg.Client({ connectionString: target.adminUrl });
  await admin.connect();
  await admin.query(`create database ${name} owner ${pg.escapeIdentifier(owner)}`);
  await admin.end();
  const url = new URL(target.url);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ url: url.toString(), dataDir: '', log: pino({ level: 'silent' }), poolSize: 5 });
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
