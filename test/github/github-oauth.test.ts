import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oauthStartLink } from '../../integrations/github/github-oauth-routes.ts';
import { createSecretBox } from '../../integrations/github/secret-box.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const secretKey = 'a-test-secret-key-of-at-least-32-characters';

/** Opens a sign-in link as a browser would: the state GitHub will get, and the cookie set for it. */
async function openLink(link: string): Promise<{ authorize: URL; state: string; cookie: string }> {
  const start = await fetch(link, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get('location')!);
  const setCookie = start.headers.get('set-cookie') ?? '';
  expect(setCookie).toMatch(/HttpOnly/);
  return { authorize, state: authorize.searchParams.get('state')!, cookie: setCookie.split(';')[0]! };
}

describe('GitHub sign-in: PRs opened as the person who asked', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    const model = createScriptedProvider({
      scenario: (messages: readonly ModelMessage[]) =>
        messages.some((m) => m.role === 'tool')
          ? { text: 'Added notes.md.' }
          : { toolCalls: [{ name: 'write_file', input: { path: 'notes.md', content: 'notes\n' } }] },
    });
    app = await startGitHubPatchbay(fake, model, {
      GITHUB_OAUTH_CLIENT_ID: fake.oauthClient.id,
      GITHUB_OAUTH_CLIENT_SECRET: fake.oauthClient.secret,
      PATCHBAY_SECRET_KEY: secretKey,
      GITHUB_PR_DRAFT: 'false',
    });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  it('refuses a start link Patchbay did not sign', async () => {
    const response = await fetch(`${app.url}/github/oauth/start?link=forged`, { redirect: 'manual' });
    expect(response.status).toBe(400);
  });

  it('refuses a code GitHub does not accept without writing the client secret to the log', async () => {
    const bob = fake.addUser('bob');
    const link = oauthStartLink(createSecretBox(secretKey), app.url, { source: 'github', id: String(bob.id) });
    const { state, cookie } = await openLink(link);
    const callback = await fetch(
      `${app.url}/github/oauth/callback?code=not-a-real-code&state=${encodeURIComponent(state)}`,
      { headers: { cookie } },
    );
    expect(callback.status).toBe(502);
    const failure = app.logLines.find((line) => line.includes('GitHub sign-in failed'));
    expect(failure).toBeDefined();
    expect(failure).toContain('bad_verification_code');
    expect(app.logLines.filter((line) => line.includes(fake.oauthClient.secret))).toEqual([]);
  });

  it('stores the token encrypted and opens the PR with it', async () => {
    const alice = fake.addUser('alice');
    await fake.addRepo('octo-org', 'demo', upstream.remote, 31, { alice: 'write' });
    const link = oauthStartLink(createSecretBox(secretKey), app.url, { source: 'github', id: String(alice.id) });

    const { authorize, cookie } = await openLink(link);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${fake.gitUrl}/login/oauth/authorize`);
    expect(authorize.searchParams.get('client_id')).toBe(fake.oauthClient.id);
    // GitHub sends the browser back with a code and the state.
    const code = fake.authorizeCode('alice');
    const callback = await fetch(
      `${app.url}/github/oauth/callback?code=${code}&state=${encodeURIComponent(authorize.searchParams.get('state')!)}`,
      { headers: { cookie } },
    );
    expect(callback.status).toBe(200);
    // The code is a credential: not in the request log, nor anywhere else in the log.
    expect(app.logLines.filter((line) => line.includes(code))).toEqual([]);
    // The request is logged (at debug), by its path only: no query string reaches the log.
    expect(app.logLines.some((line) => line.includes('"url":"/github/oauth/callback"'))).toBe(true);
    expect(await callback.text()).toContain('@alice');
    const row = await app.database.db.selectFrom('github_user_tokens').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ actor_key: `github:${alice.id}`, github_login: 'alice' });
    expect(row.token_ciphertext).not.toMatch(/ghu_/);

    const comment = fake.addComment('octo-org', 'demo', 12, alice, '@patchbay-test write notes');
    const payload = issueCommentEvent(
      { owner: 'octo-org', repo: 'demo', installationId: 31 },
      { number: 12, title: 'Notes', body: 'Write notes.', commentId: comment.id, user: alice, comment: comment.body },
    );
    expect((await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner: 'octo-org', repo: 'demo', number: 12, kind: 'issue' }),
      'the session',
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 60_000);
    expect(done.status).toBe('completed');
    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    expect(pr.user.login).toBe('alice');
    // Opened as a draft: only a commit that passes the harness's gate is marked ready, and this scripted run has no verdict.
    expect(pr.draft).toBe(true);
    expect(fake.calls.find((c) => c.operationId === 'pulls/create')?.as).toBe('alice');
    expect(fake.refused).toEqual([]);
  }, 90_000);

  it('refuses a callback in a browser that did not open the link: a forwarded link attaches nobody', async () => {
    // Mallory opens her own sign-in link and sends the GitHub authorize page to Carol. Carol signs
    // in at GitHub, which sends Carol's browser back with Carol's code and Mallory's state.
    const mallory = fake.addUser('mallory');
    fake.addUser('carol');
    // (A GitHub identity's link: a Slack one first passes Sign in with Slack, see test/security/identity-links.test.ts.)
    const link = oauthStartLink(createSecretBox(secretKey), app.url, { source: 'github', id: String(mallory.id) });
    const { state, cookie: malloryCookie } = await openLink(link);
    const code = fake.authorizeCode('carol');
    const url = `${app.url}/github/oauth/callback?code=${code}&state=${encodeURIComponent(state)}`;
    const carolsBrowser = await fetch(url);
    expect(carolsBrowser.status).toBe(400);
    expect(await carolsBrowser.text()).toMatch(/same browser where you opened the link/);
    // Another browser's cookie does not pass either.
    const { cookie: otherCookie } = await openLink(link);
    expect(otherCookie).not.toBe(malloryCookie);
    expect((await fetch(url, { headers: { cookie: otherCookie } })).status).toBe(400);
    const rows = await app.database.db
      .selectFrom('github_user_tokens')
      .selectAll()
      .where('actor_key', '=', `github:${mallory.id}`)
      .execute();
    expect(rows).toEqual([]);
    expect(
      await app.database.db.selectFrom('github_user_tokens').selectAll().where('github_login', '=', 'carol').execute(),
    ).toEqual([]);
    // A sign-in link is not a state: it cannot skip the start.
    const linkAsState = new URL(link).searchParams.get('link')!;
    expect(
      (
        await fetch(`${app.url}/github/oauth/callback?code=${code}&state=${encodeURIComponent(linkAsState)}`, {
          headers: { cookie: malloryCookie },
        })
      ).status,
    ).toBe(400);
    expect(app.logLines.filter((line) => line.includes(code))).toEqual([]);
  });
});
