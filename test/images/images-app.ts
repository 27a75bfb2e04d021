import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import sharp from 'sharp';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * Patchbay as `patchbay serve` starts it, configured from the environment only (`loadConfig` →
 * `startPatchbay` with `buildIntegrations`): the images tests give it the fakes' URLs and tokens.
 */
export async function startImagesApp(env: Record<string, string>): Promise<Patchbay & { dispose(): Promise<void> }> {
  const database = await createTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'patchbay-images-'));
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    DATABASE_URL: database.url,
    PORT: '0',
    PUBLIC_URL: 'http://patchbay.test',
    LOG_LEVEL: 'silent',
    SANDBOX_EGRESS_ALLOW: 'none',
    ...env,
  });
  const app = await startPatchbay(config, {
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    serve: true,
    work: true,
    queue: { pollingIntervalSeconds: 0.5 },
    integrations: (context) => buildIntegrations(config, context),
  });
  return {
    ...app,
    async dispose() {
      await app.close();
      await database.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A small solid PNG, as a person's screenshot would be. */
export function solidPng(width: number, height: number, rgb = { r: 255, g: 0, b: 0 }): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: rgb } })
    .png()
    .toBuffer();
}
