import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay, type Patchbay, type StartOptions } from '../../src/main.ts';
import type { ModelProvider } from '../../src/models/model-provider.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { installationCreatedEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeLinear, type FakeLinear, type FakeTeam } from '../fakes/linear/fake-linear.ts';
import { createRemote } from '../git/git-fixture.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { waitFor } from '../helpers/wait-for.ts';

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

/** The team `ENG` the Linear flow tests delegate issues from, with every kind of workflow state. */
export const engineering: FakeTeam = {
  id: 'team-eng',
  key: 'ENG',
  name: 'Engineering',
  states: [
    { id: 'st-backlog', name: 'Backlog', type: 'backlog', position: 0 },
    { id: 'st-todo', name: 'Todo', type: 'unstarted', position: 1 },
    { id: 'st-review', name: 'In Review', type: 'started', position: 3 },
    { id: 'st-progress', name: 'In Progress', type: 'started', position: 2 },
    { id: 'st-done', name: 'Done', type: 'completed', position: 4 },
  ],
};

export type LinearFlow = {
  linear: FakeLinear;
  github: FakeGitHub;
  app: LinearPatchbay;
  /** `alice`, who may write to the repository (GitHub comments in the tests come from her). */
  alice: ReturnType<FakeGitHub['addUser']>;
  dispose(): Promise<void>;
};

/**
 * The Linear flow as the tests start it: fake Linear with the team (`engineering` unless given),
 * fake GitHub with `owner/repo` on a real git remote, `alice` able to write to it (unless `writers`
 * says who), and Patchbay configured from the environment on both, with the GitHub App's
 * installation of the repository announced by its webhook and stored.
 */
export async function startLinearFlow(input: {
  owner: string;
  repo: string;
  installationId: number;
  /** GitHub's id of the repository, as the installation webhook names it. */
  repoId: number;
  model: ModelProvider;
  env?: Record<string, string>;
  options?: Pick<StartOptions, 'inbound'>;
  team?: FakeTeam;
  writers?: Record<string, 'write'>;
}): Promise<LinearFlow> {
  const linear = await startFakeLinear();
  const github = await startFakeGitHub();
  const upstream = await createRemote();
  const alice = github.addUser('alice');
  const { owner, repo, installationId } = input;
  await github.addRepo(owner, repo, upstream.remote, installationId, input.writers ?? { alice: 'write' });
  linear.addTeam(structuredClone(input.team ?? engineering));
  const app = await startLinearPatchbay({ linear, github }, input.model, input.env, input.options);
  const installed = installationCreatedEvent(installationId, owner, [
    { id: input.repoId, full_name: `${owner}/${repo}` },
  ]);
  const sent = await sendWebhook(`${app.url}/github/webhooks`, githubSecret, 'installation', installed);
  if (sent.status !== 202) throw new Error(`the installation webhook was answered ${sent.status}`);
  await waitFor(
    async () => (await app.database.db.selectFrom('github_installation_repos').selectAll().execute()).length === 1,
    'the installation',
  );
  return {
    linear,
    github,
    app,
    alice,
    async dispose() {
      await app.dispose();
      await linear.close();
      await github.close();
      await upstream.cleanup();
    },
  };
}
