import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedServer } from '../db/embedded-postgres.ts';

let server: EmbeddedServer | undefined;

/**
 * One embedded PostgreSQL for the whole run (the same code path `patchbay serve` uses with no
 * DATABASE_URL); each test file makes its own database on it. When DATABASE_URL is set, store tests
 * run against that server as well.
 */
export async function setup(project: TestProject): Promise<void> {
  const dataDir = join(tmpdir(), 'patchbay-test-data');
  await mkdir(dataDir, { recursive: true });
  server = await startEmbeddedPostgres({ dataDir, log: pino({ level: 'warn' }) });
  project.provide('embeddedDatabaseUrl', server.url);
  project.provide('externalDatabaseUrl', process.env.DATABASE_URL ?? '');
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    embeddedDatabaseUrl: string;
    externalDatabaseUrl: string;
  }
}
