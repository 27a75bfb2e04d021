import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitHubClient } from '../../integrations/github/github-client.ts';
import { createGitHubRepoAccess } from '../../integrations/github/github-repo-access.ts';
import type { GitHubStore } from '../../integrations/github/github-store.ts';
import type { Actor } from '../../src/core/actor.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';

const log = pino({ level: 'silent' });

/**
 * The GitHub App's answer to "may this requester have work done here" (issue 36), asked of the fake
 * GitHub with two installations through the real Octokit: the installation from GET
 * /repos/{owner}/{repo}/installation, the person from their login, the account they connected, or
 * the account id another service linked, and their permission from the collaborator endpoint.
 */
describe('createGitHubRepoAccess against the fake GitHub', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let aliceId: number;
  /** Slack people who ran `connect github`, as the store keeps their accounts. */
  const connected = new Map<string, string>([['slack:U0ALICE01', 'alice']]);
  const store = {
    installationFor: async () => undefined,
    userToken: async (key: string) => {
      const login = connected.get(key);
      return login && { login, githubId: aliceId, ciphertext: 'sealed' };
    },
  } as unknown as GitHubStore;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    aliceId = fake.addUser('alice').id;
    fake.addUser('victor');
    await fake.addRepo('octo-org', 'public', upstream.remote, 77, { alice: 'write' });
    await fake.addRepo('octo-org', 'docs', upstream.remote, 77, { alice: 'read' });
    await fake.addRepo('victim-org', 'secret', upstream.remote, 88, { victor: 'admin' });
  });
  afterAll(async () => {
    await fake.close();
    await upstream.cleanup();
  });

  const access = () => {
    const client = createGitHubClient({
      appId: String(fake.appId),
      privateKey: fake.privateKey,
      apiUrl: fake.apiUrl,
      gitUrl: fake.gitUrl,
      store,
      log,
    });
    return createGitHubRepoAccess({ client, store, gitUrl: fake.gitUrl });
  };
  const url = (fullName: string) => `${fake.gitUrl}/${fullName}`;
  const ask = (requester: Actor, repo: string, home = 'octo-org/public') =>
    access().check({ requester, repo: url(repo), home: url(home), signal: new AbortController().signal });

  const githubAlice: Actor = { source: 'github', id: String(1), name: 'alice', githubLogin: 'alice' };
  const slackAlice: Actor = { source: 'slack', id: 'U0ALICE01', name: 'Alice' };
  const slackBob: Actor = { source: 'slack', id: 'U0BOB0002', name: 'Bob' };

  it('allows a GitHub requester where they write, in any installation the App has', async () => {
    expect(await ask(githubAlice, 'octo-org/public')).toEqual({ allowed: true });
  });

  it('refuses a GitHub requester where they only read, and where they have no permission', async () => {
    const read = await ask(githubAlice, 'octo-org/docs');
    expect(read).toEqual({ allowed: false, reason: expect.stringContaining('their permission there is read') });
    const none = await ask(githubAlice, 'victim-org/secret');
    expect(none).toEqual({
      allowed: false,
      reason: expect.stringContaining('alice (@alice on GitHub) has no write access to victim-org/secret'),
    });
  });

  it('checks a Slack person who connected their GitHub account as that account', async () => {
    expect(await ask(slackAlice, 'octo-org/public')).toEqual({ allowed: true });
    expect(await ask(slackAlice, 'victim-org/secret')).toEqual({
      allowed: false,
      reason: expect.stringContaining('Alice (@alice on GitHub) has no write access'),
    });
  });

  it('checks a person another service linked to a GitHub account id as that account', async () => {
    const linearAlice: Actor = { source: 'linear', id: 'u-ada', name: 'Ada', githubId: String(aliceId) };
    expect(await ask(linearAlice, 'octo-org/public')).toEqual({ allowed: true });
    expect(await ask(linearAlice, 'victim-org/secret')).toEqual({
      allowed: false,
      reason: expect.stringContaining('Ada (@alice on GitHub) has no write access'),
    });
  });

  it('keeps a person GitHub does not know in the installation of the repository their request named', async () => {
    expect(await ask(slackBob, 'octo-org/docs')).toEqual({ allowed: true });
    expect(await ask(slackBob, 'victim-org/secret')).toEqual({
      allowed: false,
      reason: expect.stringContaining('victim-org/secret is outside the GitHub App installation of octo-org/public'),
    });
    // Their request named the other organization's repository: that installation is theirs to use.
    expect(await ask(slackBob, 'victim-org/secret', 'victim-org/secret')).toEqual({ allowed: true });
  });

  it('refuses a repository the App is not installed on, and has no answer for another host', async () => {
    const before = fake.refused.length;
    expect(await ask(githubAlice, 'nobody/nowhere')).toEqual({
      allowed: false,
      reason: 'the GitHub App is not installed on nobody/nowhere, so I cannot work there',
    });
    // GitHub's 404 for the installation lookup, the one refusal this asked for.
    expect(fake.refused.slice(before).map((r) => [r.path, r.status])).toEqual([
      ['/api/v3/repos/nobody/nowhere/installation', 404],
    ]);
    const elsewhere = await access().check({
      requester: githubAlice,
      repo: 'https://gitlab.example/acme/app',
      home: url('octo-org/public'),
      signal: new AbortController().signal,
    });
    expect(elsewhere).toBeUndefined();
    expect(fake.refused.slice(before + 1)).toEqual([]);
  });

  it('does not take a GitHub outage on the installation lookup for "not installed"', { timeout: 60_000 }, async () => {
    const client = createGitHubClient({
      appId: String(fake.appId),
      privateKey: fake.privateKey,
      apiUrl: fake.apiUrl,
      gitUrl: fake.gitUrl,
      store,
      log,
    });
    fake.fail('apps/get-repo-installation', 502, 'Bad Gateway');
    try {
      const failed = await client.forRepo({ owner: 'octo-org', repo: 'public' }).catch((error: unknown) => error);
      expect(failed).toMatchObject({ status: 502 });
      expect(String((failed as Error).message)).not.toMatch(/not installed/i);
    } finally {
      fake.restore('apps/get-repo-installation');
    }
    // A real 404 still is.
    await expect(client.forRepo({ owner: 'nobody', repo: 'nowhere' })).rejects.toThrow(
      'The GitHub App is not installed on nobody/nowhere',
    );
  });
});
