import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay, type StartOptions } from '../../src/main.ts';
import type { ModelProvider } from '../../src/models/model-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

export const webhookSecret = 'fake-webhook-secret-for-tests';

export type GitHubPatchbay = Patchbay & {
  url: string;
  dataDir: string;
  logLines: string[];
  /** The database it runs on (another process may be started on the same one). */
  databaseUrl: string;
  /** The TCP proxy between Patchbay and its database, when asked for: `cut()` takes the database away. */
  databaseProxy?: TcpProxy;
  dispose(): Promise<void>;
};

/** The whole Patchbay (real database, worker, sandbox, HTTP server) configured for the fake GitHub. */
export async function startGitHubPatchbay(
  fake: FakeGitHub,
  model: ModelProvider | undefined,
  env: Record<string, string> = {},
  options: Pick<StartOptions, 'inbound'> & {
    verifierModel?: ModelProvider;
    databaseProxy?: boolean;
    /** Another Patchbay's database, shared (as a second process of one deployment); it is not dropped here. */
    sharedDatabaseUrl?: string;
  } = {},
): Promise<GitHubPatchbay> {
  const dataDir = await mkdtemp(join(tmpdir(), 'patchbay-gh-'));
  const database = options.sharedDatabaseUrl
    ? { url: options.sharedDatabaseUrl, close: async () => undefined }
    : await createTestDatabase();
  const target = new URL(database.url);
  const proxy = options.databaseProxy
    ? await startTcpProxy({ host: target.hostname, port: Number(target.port) })
    : undefined;
  const logLines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });
  const config = loadConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: proxy ? proxy.via(database.url) : database.url,
    PORT: '0',
    PUBLIC_URL: 'http://patchbay.test',
    GITHUB_APP_ID: String(fake.appId),
    GITHUB_APP_PRIVATE_KEY: fake.privateKey,
    GITHUB_WEBHOOK_SECRET: webhookSecret,
    GITHUB_API_URL: fake.apiUrl,
    GITHUB_GIT_URL: fake.gitUrl,
    ...env,
  });
  const { databaseProxy: _proxy, sharedDatabaseUrl: _shared, ...startOptions } = options;
  const app = await startPatchbay(config, {
    log,
    work: true,
    serve: true,
    // Without a model here, the one the environment configures (MODEL_PROVIDER, …) is built.
    ...(model && { model }),
    ...(options.verifierModel && { verifierModel: options.verifierModel }),
    queue: { pollingIntervalSeconds: 0.5 },
    ...startOptions,
    integrations: (context) => buildIntegrations(config, context),
  });
  return {
    ...app,
    url: app.url!,
    dataDir,
    logLines,
    databaseUrl: database.url,
    ...(proxy && { databaseProxy: proxy }),
    async dispose() {
      await app.close();
      await proxy?.close();
      await database.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Every file under `dir` that contains `needle` (symlinks not followed). */
export async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const hits: string[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const content = await readFile(path).catch(() => undefined);
    if (content?.includes(needle)) hits.push(path);
  }
  return hits;
}
