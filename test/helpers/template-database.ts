import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { openDatabase } from '../../db/database.ts';
import { createRunQueue } from '../../src/sessions/worker/run-queue.ts';

/** A server to make databases on: `adminUrl` creates and drops them, `url`'s role owns and uses them. */
export type DatabaseServer = { url: string; adminUrl: string };

/**
 * Makes the run's template database on `server`: migrated to the latest schema with pg-boss's schema
 * and Patchbay's queues in place, as `patchbay serve` would leave it. Every test database is a copy
 * (`CREATE DATABASE … TEMPLATE`), which takes a fraction of migrating one from nothing.
 */
export async function createTemplateDatabase(server: DatabaseServer): Promise<string> {
  const name = `patchbay_template_${randomBytes(5).toString('hex')}`;
  const owner = decodeURIComponent(new URL(server.url).username);
  await asAdmin(server.adminUrl, `create database ${name} owner ${pg.escapeIdentifier(owner)}`);
  const url = databaseUrl(server.url, name);
  const log = pino({ level: 'silent' });
  const handle = await openDatabase({ url, dataDir: '', log, poolSize: 2 });
  await handle.close();
  const queue = await createRunQueue({ url, log });
  await queue.stop();
  // A copy needs its template to have no connections; pg-boss may still be closing its last ones.
  await asAdmin(server.adminUrl, `select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`);
  return name;
}

/** Drops the templates a killed run left behind on a server only this run uses (an embedded slot). */
export async function dropLeftoverTemplates(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ datname: string }>(
      `select datname from pg_database where datname like 'patchbay\\_template\\_%'`,
    );
    for (const { datname } of rows) await client.query(`drop database if exists ${datname} with (force)`);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await asAdmin(adminUrl, `drop database if exists ${name} with (force)`);
}

/** `url` with its database name replaced by `name`. */
export function databaseUrl(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

export async function asAdmin(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
