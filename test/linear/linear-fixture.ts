import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay, type StartOptions } from '../../src/main.ts';
import type { ModelProvider } from '../../src/models/model-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import type { FakeLinear } from '../fakes/linear/fake-linear.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

export const linearSecret = 'lin_wh_fake-signing-secret-for-tests';
export const githubSecret = 'fake-webhook-secret-for-tests';

export type LinearPatchbay = Patchbay & { url: string; logLines: string[]; dispose(): Promise<void> };

/**
 * The whole Patchbay (real database, worker, sandbox, HTTP server) configured from the environment
 * alone for the fake Linear and, when given, the fake GitHub.
 */
export async function startLinearPatchbay(
  fakes: { linear: FakeLinear; github?: FakeGitHub },
  model: ModelProvider,
  env: Record<string, string> = {},
  options: Pick<StartOptions, 'inbound'> = {},
): Promise<LinearPatchbay> {
  const dataDir = await mkdtemp(join(tmpdir(), 'patchbay-linear-'));
  const database = await createTestDatabase();
  const logLines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
  const { github } = fakes;
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    PORT: '0',
    PUBLIC_URL: 'http://patchbay.test',
    LINEAR_ACCESS_TOKEN: fakes.linear.accessToken,
    LINEAR_WEBHOOK_SECRET: linearSecret,
    LINEAR_API_URL: fakes.linear.apiUrl,
    ...(github && {
      GITHUB_APP_ID: String(github.appId),
      GITHUB_APP_PRIVATE_KEY: github.privateKey,
      GITHUB_WEBHOOK_SECRET: githubSecret,
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
    }),
    ...env,
  });
  const app = await startPatchbay(config, {
    log,
    work: true,
    serve: true,
    model,
    queue: { pollingIntervalSeconds: 0.5 },
    ...options,
    integrations: (context) => buildIntegrations(config, context),
  });
  return {
    ...app,
    url: app.url!,
    logLines,
    async dispose() {
      await app.close();
      await database.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
