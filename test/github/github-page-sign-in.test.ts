import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPageSignIns } from '../../src/api/page-sessions.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { launchChromium, openPage } from '../web/chromium.ts';
import { startGitHubPatchbay, type GitHubPatchbay } from './github-fixture.ts';

const apiToken = 'page-sign-in-api-token-0123456789';

/** Signs `login` in the way a browser does: start, GitHub's redirect back with a code, the callback. */
async function signIn(
  app: GitHubPatchbay,
  fake: FakeGitHub,
  login: string,
): Promise<{ response: Response; code: string }> {
  const start = await fetch(`${app.url}/github/oauth/page`, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get('location')!);
  expect(`${authorize.origin}${authorize.pathname}`).toBe(`${fake.gitUrl}/login/oauth/authorize`);
  const browser = (start.headers.get('set-cookie') ?? '').split(';')[0]!;
  const code = fake.authorizeCode(login);
  const response = await fetch(
    `${app.url}/github/oauth/callback?code=${code}&state=${encodeURIComponent(authorize.searchParams.get('state')!)}`,
    {
      headers: { cookie: browser },
      redirect: 'manual',
    },
  );
  return { response, code };
}

/** The page's session cookie a response sets, as a browser would send it back. */
const sessionCookie = (response: Response) =>
  response.headers
    .getSetCookie()
    .find((c) => c.startsWith('patchbay_session='))
    ?.split(';')[0];

describe('signing in to the web page with GitHub (PATCHBAY_API_TOKEN, WEB_SIGNIN_GITHUB_USERS, WEB_SIGNIN_GITHUB_ORG)', () => {
  let fake: FakeGitHub;
  let app: GitHubPatchbay;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    for (const login of ['alice', 'carol', 'dave', 'erin']) fake.addUser(login);
    fake.addOrgMember('octo-org', 'carol');
    fake.addOrgMember('octo-org', 'dave', 'pending');
    app = await startGitHubPatchbay(fake, undefined, {
      MODEL_PROVIDER: 'scripted',
      PATCHBAY_API_TOKEN: apiToken,
      GITHUB_OAUTH_CLIENT_ID: fake.oauthClient.id,
      GITHUB_OAUTH_CLIENT_SECRET: fake.oauthClient.secret,
      PATCHBAY_SECRET_KEY: 'a-test-secret-key-of-at-least-32-characters',
      WEB_SIGNIN_GITHUB_USERS: 'Alice',
      WEB_SIGNIN_GITHUB_ORG: 'octo-org',
    });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
  });

  it('offers GitHub on the sign-in form', { timeout: 60_000 }, async () => {
    const auth = await (await fetch(`${app.url}/api/auth`)).json();
    expect(auth).toEqual({
      required: true,
      signedIn: false,
      providers: [{ name: 'GitHub', url: '/github/oauth/page' }],
    });
    const browser = await launchChromium();
    try {
      const { page, problems } = await openPage(browser.context, `${app.url}/`);
      await page.locator('#token-form a.sign-in-with', { hasText: 'sign in with GitHub' }).waitFor();
      expect(await page.locator('#token-form a.sign-in-with').getAttribute('href')).toBe('/github/oauth/page');
      expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('lets a listed login in with an HttpOnly, SameSite=Strict session cookie, and keeps the code out of the log', async () => {
    const { response, code } = await signIn(app, fake, 'alice');
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/');
    const set = response.headers.getSetCookie().find((c) => c.startsWith('patchbay_session='))!;
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    const cookie = sessionCookie(response)!;
    expect((await fetch(`${app.url}/api/sessions`, { headers: { cookie } })).status).toBe(200);
    expect(await (await fetch(`${app.url}/api/auth`, { headers: { cookie } })).json()).toMatchObject({
      signedIn: true,
    });
    expect(app.logLines.filter((line) => line.includes(code))).toEqual([]);
    expect(
      app.logLines.some((line) => line.includes('signed in to the page with GitHub') && line.includes('alice')),
    ).toBe(true);
  });

  it('lets an active member of the organization in, and refuses a pending member and someone else with the reason', async () => {
    const carol = await signIn(app, fake, 'carol');
    expect(carol.response.status).toBe(302);
    expect(
      (await fetch(`${app.url}/api/sessions`, { headers: { cookie: sessionCookie(carol.response)! } })).status,
    ).toBe(200);

    for (const login of ['dave', 'erin']) {
      const { response } = await signIn(app, fake, login);
      expect(response.status).toBe(403);
      expect(await response.text()).toContain(`@${login} may not open this Patchbay's page`);
      expect(sessionCookie(response)).toBeUndefined();
    }
    expect(
      fake.calls.filter((c) => c.operationId === 'orgs/get-membership-for-authenticated-user').map((c) => c.as),
    ).toEqual(['carol', 'dave', 'erin']);
    expect(fake.refused).toEqual([]);
  });

  it('refuses a changed cookie, one made under another API token, and a callback in a browser that did not start', async () => {
    const { response } = await signIn(app, fake, 'alice');
    const cookie = sessionCookie(response)!;
    expect((await fetch(`${app.url}/api/sessions`, { headers: { cookie } })).status).toBe(200);
    const id = cookie.slice('patchbay_session='.length);
    const changed = `${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`;
    expect(
      (await fetch(`${app.url}/api/sessions`, { headers: { cookie: `patchbay_session=${changed}` } })).status,
    ).toBe(401);
    // A session made under another API token (in the same database) opens nothing here.
    const otherServer = (
      await createPageSignIns({ db: app.database.db, token: 'another-api-token-0123456789', secure: false }).cookieFor(
        'github:alice',
      )
    ).split(';')[0]!;
    expect((await fetch(`${app.url}/api/sessions`, { headers: { cookie: otherServer } })).status).toBe(401);

    // GitHub's redirect back reaching a browser without the start's cookie signs nobody in.
    const start = await fetch(`${app.url}/github/oauth/page`, { redirect: 'manual' });
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const elsewhere = await fetch(
      `${app.url}/github/oauth/callback?code=${fake.authorizeCode('alice')}&state=${encodeURIComponent(state)}`,
      { redirect: 'manual' },
    );
    expect(elsewhere.status).toBe(400);
    expect(sessionCookie(elsewhere)).toBeUndefined();
  });
});
