import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { TestProject } from 'vitest/node';
import { releaseExitHooks, startEmbeddedPostgres, type EmbeddedServer } from '../db/embedded-postgres.ts';
import { isPatchbayError } from '../src/core/errors.ts';
import { createTemplateDatabase, dropDatabase, dropLeftoverTemplates } from './helpers/template-database.ts';

let server: EmbeddedServer | undefined;
const templates: { adminUrl: string; name: string }[] = [];

/**
 * One embedded PostgreSQL for the whole run (the same code path `patchbay serve` uses with no
 * DATABASE_URL); each test file makes its own database on it, owned by the same non-superuser app
 * role Patchbay uses, so tests run with the privileges production has. When DATABASE_URL is set, store tests
 * run against that server as well.
 */
export async function setup(project: TestProject): Promise<void> {
  // Servers the tests start (in process or as child processes) let no sandbox traffic leave the machine.
  process.env.SANDBOX_EGRESS_ALLOW ??= 'none';
  // embedded-postgres's 'beforeExit' and 'exit' hooks turn the end of the run into process.exit(0),
  // which erased vitest's failure exit code; teardown() stops the database (signals stay hooked).
  releaseExitHooks(['beforeExit', 'exit']);
  // Several test runs may share a machine: take the first data directory no live run is using.
  for (let slot = 0; !server; slot++) {
    const dataDir = join(tmpdir(), `patchbay-test-db-${slot}`);
    await mkdir(dataDir, { recursive: true });
    try {
      server = await startEmbeddedPostgres({ dataDir, log: pino({ level: 'warn' }) });
    } catch (error) {
      // Another run holds this slot (or is starting in it right now): try the next one.
      if (!isPatchbayError(error) || slot >= 16) throw error;
    }
  }
  project.provide('embeddedDatabaseUrl', server.url);
  project.provide('embeddedAdminUrl', server.adminUrl);
  project.provide('externalDatabaseUrl', process.env.DATABASE_URL ?? '');
  // One migrated template per server for the whole run; each test database is a copy of it.
  await dropLeftoverTemplates(server.adminUrl);
  project.provide('embeddedTemplate', await template({ url: server.url, adminUrl: server.adminUrl }));
  const external = process.env.DATABASE_URL;
  project.provide('externalTemplate', external ? await template({ url: external, adminUrl: external }) : '');
  // Said in every run's output, so a missing server leg is never mistaken for a passing one.
  if (!process.env.DATABASE_URL)
    process.stdout.write(
      'store tests: DATABASE_URL is not set, so the server-PostgreSQL leg did NOT run (embedded only)\n',
    );
}

export async function teardown(): Promise<void> {
  for (const { adminUrl, name } of templates) await dropDatabase(adminUrl, name).catch(() => undefined);
  await server?.stop();
}

async function template(target: { url: string; adminUrl: string }): Promise<string> {
  const name = await createTemplateDatabase(target);
  templates.push({ adminUrl: target.adminUrl, name });
  return name;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The app role (no superuser) on its database: what Patchbay connects with. */
    embeddedDatabaseUrl: string;
    /** The embedded superuser, for creating the per-file test databases. */
    embeddedAdminUrl: string;
    externalDatabaseUrl: string;
    /** The migrated template database each test database is copied from, per server. */
    embeddedTemplate: string;
    externalTemplate: string;
  }
}
