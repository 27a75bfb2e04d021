import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../db/database.ts';

export type DatabaseTarget = { name: string; url: string };

/** The servers store tests run against: the embedded one always, DATABASE_URL's when set. */
export function databaseTargets(): DatabaseTarget[] {
  const targets = [{ name: 'embedded', url: inject('embeddedDatabaseUrl') }];
  const external = inject('externalDatabaseUrl');
  if (external) targets.push({ name: 'DATABASE_URL', url: external });
  return targets;
}

/** A fresh, migrated database on the target server, dropped again by `close`. */
export async function createTestDatabase(serverUrl = inject('embeddedDatabaseUrl')): Promise<DatabaseHandle & { name: string }> {
  const name = `patchbay_test_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const handle = await openDatabase({ url: url.toString(), dataDir: '', log: pino({ level: 'silent' }), poolSize: 5 });
  return {
    ...handle,
    name,
    async close() {
      await handle.close();
      const cleanup = new pg.Client({ connectionString: serverUrl });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}
