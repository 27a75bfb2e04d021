import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitHubClient } from '../../integrations/github/github-client.ts';
import type { GitHubStore } from '../../integrations/github/github-store.ts';
import { runHostGit } from '../../src/git/host-git.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';

const log = pino({ level: 'silent' });
const noInstallations = { installationFor: async () => undefined } as unknown as GitHubStore;

describe('GitHub App auth against the fake (real Octokit)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let scratch: string;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    await fake.addRepo('octo-org', 'demo', upstream.remote, 5);
    await fake.addRepo('octo-org', 'secret', upstream.remote, 5);
    scratch = await mkdtemp(join(tmpdir(), 'gh-auth-'));
  });
  afterAll(async () => {
    await fake.close();
    await upstream.cleanup();
    await rm(scratch, { recursive: true, force: true });
  });

  const client = (privateKey = fake.privateKey) =>
    createGitHubClient({
      appId: String(fake.appId),
      privateKey,
      apiUrl: fake.apiUrl,
      gitUrl: fake.gitUrl,
      store: noInstallations,
      log,
    });

  it('reads the bot handle from GET /app, signing a JWT the fake accepts (PKCS#1 key converted)', async () => {
    expect(await client().identity()).toEqual({
      slug: fake.slug,
      login: `${fake.slug}[bot]`,
      mention: `@${fake.slug}`,
    });
  });

  it('is refused with a JWT signed by another key', async () => {
    const other = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    await expect(client(other.privateKey).identity()).rejects.toThrow();
    expect(fake.refused.at(-1)).toMatchObject({ status: 401, message: 'bad JWT signature' });
    fake.refused.length = 0;
  });

  it('gives host git a per-repo installation token through the environment only, cached across calls', async () => {
    const gh = client();
    const repoUrl = `${fake.gitUrl}/octo-org/demo`;
    const env = (await gh.gitEnv(repoUrl))!;
    expect(Object.keys(env).sort()).toEqual(['GIT_CONFIG_COUNT', 'GIT_CONFIG_KEY_0', 'GIT_CONFIG_VALUE_0']);
    await runHostGit(['clone', '--bare', '--quiet', repoUrl, join(scratch, 'demo.git')], {
      env,
      signal: AbortSignal.timeout(30_000),
    });
    expect(await gh.gitEnv(repoUrl)).toEqual(env);
    expect(fake.issuedTokens).toHaveLength(1);
    // The token was minted for demo only: it cannot read another repository of the App.
    await expect(
      runHostGit(['ls-remote', `${fake.gitUrl}/octo-org/secret`], { env, signal: AbortSignal.timeout(30_000) }),
    ).rejects.toThrow(/git_failed|failed/);
    // Without credentials git gets the Basic challenge and fails.
    await expect(runHostGit(['ls-remote', repoUrl], { signal: AbortSignal.timeout(30_000) })).rejects.toThrow(
      /Authentication failed|could not read Username|terminal prompts/,
    );
    expect(await gh.gitEnv('https://gitlab.example/octo-org/demo')).toBeUndefined();
    expect(fake.refused).toEqual([]);
  });
});
