import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oauthStartLink } from '../../integrations/github/github-oauth-routes.ts';
import { createSecretBox } from '../../integrations/github/secret-box.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { envelope, message, signBody } from '../fakes/fake-slack-events.ts';
import { startGitHubPatchbay, type GitHubPatchbay } from '../github/github-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';

const BOT_TOKEN = 'xoxb-identity-links-bot';
const SIGNING_SECRET = 'identity-links-signing-secret';
const secretKey = 'a-test-secret-key-of-at-least-32-characters';
const MALLORY = 'U0MALLORY';
const CAROL = 'U0CAROL01';
const PUBLIC_URL = 'http://patchbay.test';

// Finding 3: a "connect github" link proves, with Sign in with Slack, that the browser belongs to
// the Slack user who asked, before GitHub's sign-in; a forwarded link attaches nothing. Configured
// from the environment alone, against the fake Slack (Web API + OpenID Connect) and fake GitHub.
describe('identity links: the person who opens the link is the person it was made for', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let app: GitHubPatchbay;
  /** A URL under PUBLIC_URL, as this test's browser reaches the server. */
  const here = (url: string) => url.replace(PUBLIC_URL, app.url);

  beforeAll(async () => {
    github = await startFakeGitHub();
    github.addUser('mallory');
    github.addUser('carol');
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [
        { id: MALLORY, name: 'mallory', realName: 'Mallory' },
        { id: CAROL, name: 'carol', realName: 'Carol' },
      ],
      channels: ['C123ABC456', 'D0MALLORY'],
    });
    app = await startGitHubPatchbay(github, undefined, {
      MODEL_PROVIDER: 'scripted',
      GITHUB_OAUTH_CLIENT_ID: github.oauthClient.id,
      GITHUB_OAUTH_CLIENT_SECRET: github.oauthClient.secret,
      PATCHBAY_SECRET_KEY: secretKey,
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      SLACK_API_URL: slack.apiUrl,
      SLACK_CLIENT_ID: slack.oidc.client.id,
      SLACK_CLIENT_SECRET: slack.oidc.client.secret,
    });
  }, 90_000);
  afterAll(async () => {
    await app?.dispose();
    await github?.close();
    await slack?.close();
  });

  const tokens = () => app.database.db.selectFrom('github_user_tokens').selectAll().execute();

  /** Mallory asks Patchbay in a DM; the link comes back to her only. */
  async function mallorysLink(): Promise<string> {
    const before = slack.ephemerals.length;
    const signed = signBody(
      SIGNING_SECRET,
      JSON.stringify(
        envelope(message({ user: MALLORY, text: 'connect github', channel: 'D0MALLORY', channelType: 'im' })),
      ),
    );
    expect(
      (await fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body })).status,
    ).toBe(200);
    const note = await waitFor(async () => slack.ephemerals[before], 'the sign-in link');
    expect(note.user).toBe(MALLORY);
    return /(http:\/\/patchbay\.test\/github\/oauth\/start\?link=\S+)/.exec(note.text)![1]!;
  }

  /** A browser that is signed in to Slack as `slackUser` opens `link`: up to Patchbay's answer after Slack. */
  async function openAs(link: string, slackUser: string): Promise<{ response: Response; cookie: string }> {
    const start = await fetch(here(link), { redirect: 'manual' });
    expect(start.status).toBe(302);
    const authorize = new URL(start.headers.get('location')!);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${new URL(slack.apiUrl).origin}/openid/connect/authorize`);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${PUBLIC_URL}/github/oauth/prove`);
    const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0]!;
    const back = slack.oidc.authorize(authorize.toString(), slackUser);
    if ('error' in back) throw new Error(back.error);
    return { response: await fetch(here(back.redirect), { headers: { cookie }, redirect: 'manual' }), cookie };
  }

  it('refuses a forwarded link: Carol, signed in to Slack as herself, attaches nothing to Mallory', async () => {
    const link = await mallorysLink();
    const { response } = await openAs(link, CAROL);
    expect(response.status).toBe(403);
    expect(await response.text()).toMatch(/made for another Slack user\. Nothing was connected/);
    // Never sent on to GitHub: no GitHub sign-in can follow.
    expect(response.headers.get('location')).toBeNull();
    expect(await tokens()).toEqual([]);
  });

  it('lets Mallory herself through Slack, then GitHub, and connects her account only', async () => {
    const link = await mallorysLink();
    const { response } = await openAs(link, MALLORY);
    expect(response.status).toBe(302);
    const authorize = new URL(response.headers.get('location')!);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${github.gitUrl}/login/oauth/authorize`);
    const cookie = (response.headers.get('set-cookie') ?? '').split(';')[0]!;
    const code = github.authorizeCode('mallory');
    const callback = await fetch(
      `${app.url}/github/oauth/callback?code=${code}&state=${encodeURIComponent(authorize.searchParams.get('state')!)}`,
      { headers: { cookie } },
    );
    expect(callback.status).toBe(200);
    expect(await tokens()).toEqual([
      expect.objectContaining({ actor_key: `slack:${MALLORY}`, github_login: 'mallory' }),
    ]);
    expect(app.logLines.filter((line) => line.includes(code))).toEqual([]);
  });

  it('takes a Slack code once, and only in the browser that opened the link', async () => {
    const link = await mallorysLink();
    const start = await fetch(here(link), { redirect: 'manual' });
    const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0]!;
    const back = slack.oidc.authorize(start.headers.get('location')!, MALLORY);
    if ('error' in back) throw new Error(back.error);
    // Another browser (no cookie from the start) with Mallory's own code and state.
    expect((await fetch(here(back.redirect), { redirect: 'manual' })).status).toBe(400);
    const first = await fetch(here(back.redirect), { headers: { cookie }, redirect: 'manual' });
    expect(first.status).toBe(302);
    // The same code again: Slack refuses it (single use), so Patchbay goes no further.
    const again = await fetch(here(back.redirect), { headers: { cookie }, redirect: 'manual' });
    expect(again.status).toBe(502);
    expect(again.headers.get('location')).toBeNull();
    // Slack's code is a credential too: not in the request log, nor anywhere else in the log.
    const slackCode = new URL(back.redirect).searchParams.get('code')!;
    expect(
      app.logLines
        .filter((line) => line.includes(slackCode) || line.includes(slack.oidc.client.secret))
        .map((line) => line.slice(0, 400)),
    ).toEqual([]);
    // The request is logged (at debug), by its path only: no query string reaches the log.
    expect(app.logLines.some((line) => line.includes('"url":"/github/oauth/prove"'))).toBe(true);
  });

  it('refuses a link for an identity nothing here can prove, and a GitHub link signed in as someone else', async () => {
    const box = createSecretBox(secretKey);
    const linear = await fetch(here(oauthStartLink(box, PUBLIC_URL, { source: 'linear', id: 'user-1' })), {
      redirect: 'manual',
    });
    expect(linear.status).toBe(400);
    expect(await linear.text()).toMatch(/cannot check who opened this link/);

    const bob = github.addUser('bob');
    const start = await fetch(here(oauthStartLink(box, PUBLIC_URL, { source: 'github', id: String(bob.id) })), {
      redirect: 'manual',
    });
    const authorize = new URL(start.headers.get('location')!);
    const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0]!;
    const callback = await fetch(
      `${app.url}/github/oauth/callback?code=${github.authorizeCode('carol')}&state=${encodeURIComponent(authorize.searchParams.get('state')!)}`,
      { headers: { cookie } },
    );
    expect(callback.status).toBe(403);
    expect((await tokens()).map((row) => row.github_login)).toEqual(['mallory']);
  });

  it('left Slack and GitHub nothing to refuse but the replayed code', () => {
    expect(slack.refused).toEqual([{ method: 'openid.connect.token', error: 'invalid_code' }]);
    expect(github.refused).toEqual([]);
  });
});
