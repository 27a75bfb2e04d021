import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay, type StartOptions } from '../../src/main.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';
import { createTestDatabase } from './test-database.ts';
import { passingVerdict, scriptedVerifier } from './scripted-verifier.ts';

export type PatchbayFixture = Patchbay & { dataDir: string; dispose(): Promise<void> };

/** A whole Patchbay (database, queue, worker, real sandbox) on a fresh test database. */
export async function startTestPatchbay(
  options: Omit<StartOptions, 'log'> & { env?: Record<string, string> } = {},
): Promise<PatchbayFixture> {
  const dataDir = await mkdtemp(join(tmpdir(), 'patchbay-app-'));
  const database = await createTestDatabase();
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    PORT: '0',
    LOG_LEVEL: 'silent',
    SANDBOX_EGRESS_ALLOW: 'none',
    ...options.env,
  });
  const app = await startPatchbay(config, {
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    work: true,
    queue: { pollingIntervalSeconds: 0.5 },
    ...options,
    // A hand-built model serves the agent only; its verdicts come from a passing verifier unless given.
    ...(options.model && !options.verifierModel && { verifierModel: scriptedVerifier(passingVerdict) }),
  });
  return {
    ...app,
    dataDir,
    async dispose() {
      await app.close();
      await database.close();
      await removeDataDir(dataDir);
    },
  };
}
