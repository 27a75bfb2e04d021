import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import type { ModelProvider } from '../../src/models/model-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import type { FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { createTestDatabase } from './test-database.ts';

export type SlackGitHubPatchbay = {
  app: Patchbay;
  /** The test's own folder (Patchbay's data directory is `data` in it). */
  dir: string;
  /** Stops Patchbay, drops its database and removes the folder; the fakes are the caller's. */
  close(): Promise<void>;
};

/**
 * Patchbay as `patchbay serve` runs it, configured from the environment only (`loadConfig` →
 * `startPatchbay` with `buildIntegrations`): Slack's Web API and GitHub (REST, App auth, git) are
 * the given loopback fakes, the database a fresh test one, and the model the scripted provider
 * replaying `turns` from a scenario file. `env` adds settings or overrides these.
 */
export async function startSlackGitHubPatchbay(input: {
  slack: FakeSlackApi;
  github: FakeGitHub;
  botToken: string;
  signingSecret: string;
  turns: unknown[];
  env?: Record<string, string>;
  /** The independent verifier's model, when the test reads what it was shown (else the scenario's). */
  verifierModel?: ModelProvider;
}): Promise<SlackGitHubPatchbay> {
  const { slack, github } = input;
  const database = await createTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'patchbay-e2e-'));
  await writeFile(join(dir, 'scenario.json'), JSON.stringify({ turns: input.turns }));
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    DATABASE_URL: database.url,
    PORT: '0',
    PUBLIC_URL: 'http://patchbay.test',
    LOG_LEVEL: 'silent',
    MODEL_PROVIDER: 'scripted',
    SCRIPTED_SCENARIO: join(dir, 'scenario.json'),
    SLACK_BOT_TOKEN: input.botToken,
    SLACK_SIGNING_SECRET: input.signingSecret,
    SLACK_API_URL: slack.apiUrl,
    GITHUB_APP_ID: String(github.appId),
    GITHUB_APP_PRIVATE_KEY: github.privateKey,
    GITHUB_WEBHOOK_SECRET: 'e2e-webhook-secret',
    GITHUB_API_URL: github.apiUrl,
    GITHUB_GIT_URL: github.gitUrl,
    ...input.env,
  });
  const app = await startPatchbay(config, {
    log: pino({ level: 'silent' }),
    serve: true,
    work: true,
    integrations: (context) => buildIntegrations(config, context),
    ...(input.verifierModel && { verifierModel: input.verifierModel }),
  });
  return {
    app,
    dir,
    async close() {
      await app.close();
      await database.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
