import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { expect } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay } from '../../src/main.ts';
import type { ModelProvider } from '../../src/models/model-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import type { FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createTestDatabase } from './test-database.ts';
import { waitFor } from './wait-for.ts';

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
 * replaying `turns` from a scenario file. Without `turns`, `env` names the model (an engine's tests:
 * AGENT_ENGINE, MODEL_PROVIDER and the vendor's base URL at its loopback fake). `env` adds settings
 * or overrides these; `queue` the worker's polling; TEST_LOG_LEVEL shows Patchbay's log.
 */
export async function startSlackGitHubPatchbay(input: {
  slack: FakeSlackApi;
  github: FakeGitHub;
  botToken: string;
  signingSecret: string;
  turns?: unknown[];
  env?: Record<string, string>;
  queue?: { pollingIntervalSeconds: number };
  /** The independent verifier's model, when the test reads what it was shown (else the scenario's). */
  verifierModel?: ModelProvider;
}): Promise<SlackGitHubPatchbay> {
  const { slack, github } = input;
  const database = await createTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'patchbay-e2e-'));
  const scripted = input.turns && { MODEL_PROVIDER: 'scripted', SCRIPTED_SCENARIO: join(dir, 'scenario.json') };
  if (input.turns) await writeFile(join(dir, 'scenario.json'), JSON.stringify({ turns: input.turns }));
  const config = loadConfig({
    DATA_DIR: join(dir, 'data'),
    DATABASE_URL: database.url,
    PORT: '0',
    PUBLIC_URL: 'http://patchbay.test',
    LOG_LEVEL: 'silent',
    ...scripted,
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
    log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    serve: true,
    work: true,
    ...(input.queue && { queue: input.queue }),
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

/**
 * A person in one Slack channel talking to Patchbay: `post` sends a signed event (Patchbay acks it
 * with 200), `mention` asks for a task on `repoUrl` and waits for its session, `threadText` reads
 * each reply of a thread with its blocks.
 */
export function slackChannel(input: {
  /** Read when a test runs: Patchbay and the Slack fake are started in the suite's `beforeAll`. */
  app: () => Patchbay;
  slack: () => FakeSlackApi;
  signingSecret: string;
  channel: string;
  user: string;
  repoUrl: () => string;
}) {
  const post = async (event: object) => {
    const signed = signBody(input.signingSecret, JSON.stringify(envelope(event as never)));
    const url = `${input.app().url}/slack/events`;
    const res = await fetch(url, { method: 'POST', headers: signed.headers, body: signed.body });
    expect(res.status).toBe(200);
  };
  const mention = async (words: string) => {
    const event = appMention({ user: input.user, channel: input.channel, text: `${words} <${input.repoUrl()}>` });
    await post(event);
    const thread = { source: 'slack' as const, teamId: TEAM, channel: input.channel, threadTs: event.ts };
    const session = await waitFor(() => input.app().store.findByThread(thread), 'the session');
    return { threadTs: event.ts, session };
  };
  const threadText = (threadTs: string) =>
    input
      .slack()
      .thread(input.channel, threadTs)
      .map((m) => `${m.text}${JSON.stringify(m.blocks ?? [])}`);
  return { post, mention, threadText };
}
