import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook } from '../fakes/linear/fake-linear-webhooks.ts';
import { linearSecret, startLinearPatchbay, type LinearPatchbay } from './linear-fixture.ts';

/** The OAuth install (actor=app) as a workspace admin goes through it, configured from the environment alone. */
describe('Linear OAuth install', () => {
  let linear: FakeLinear;
  let app: LinearPatchbay;

  beforeAll(async () => {
    linear = await startFakeLinear();
    linear.addTeam({
      id: 't1',
      key: 'ENG',
      name: 'Engineering',
      states: [{ id: 's1', name: 'Todo', type: 'unstarted', position: 0 }],
    });
    app = await startLinearPatchbay({ linear }, createScriptedProvider({ scenario: [{ text: 'unused' }] }), {
      // No token in the environment: every call must use the installed workspace's token.
      LINEAR_ACCESS_TOKEN: '',
      LINEAR_CLIENT_ID: linear.oauth.clientId,
      LINEAR_CLIENT_SECRET: linear.oauth.clientSecret,
      PATCHBAY_SECRET_KEY: 'an-encryption-key-of-at-least-32-chars!!',
    });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await linear?.close();
  });

  it('installs as an app with the agent scopes, stores the app user id and an encrypted token, and answers with it', async () => {
    const start = await fetch(`${app.url}/linear/oauth/start`, { redirect: 'manual' });
    expect(start.status).toBe(302);
    const authorize = new URL(start.headers.get('location')!);
    expect(`${authorize.origin}${authorize.pathname}`).toBe('https://linear.app/oauth/authorize');
    expect(authorize.searchParams.get('actor')).toBe('app');
    expect(authorize.searchParams.get('scope')).toBe('read,write,app:assignable,app:mentionable');
    expect(authorize.searchParams.get('redirect_uri')).toBe('http://patchbay.test/linear/oauth/callback');

    // The admin approves on Linear; Linear redirects back with a code (here to the test server's address).
    const back = new URL(linear.authorize(authorize.toString()).redirect);
    // The install is bound to the browser that started it (its cookie).
    const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0]!;
    const forged = await fetch(`${app.url}/linear/oauth/callback?code=${back.searchParams.get('code')}&state=forged`, {
      headers: { cookie },
    });
    expect(forged.status).toBe(400);
    const callback = await fetch(`${app.url}/linear/oauth/callback${back.search}`, { headers: { cookie } });
    expect(callback.status).toBe(200);
    const rows = await app.database.db.selectFrom('linear_installations').selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.organization_id).toBe(linear.organizationId);
    expect(rows[0]!.app_user_id).toBe(linear.appUserId);
    // The access token lives about a day; its refresh token and expiry are kept beside it, and
    // neither token is in the table or the log in plain text.
    expect(linear.grants.map((g) => g.grantType)).toEqual(['authorization_code']);
    expect(rows[0]!.refresh_token_ciphertext).toEqual(expect.any(String));
    expect(rows[0]!.expires_at!.getTime() - Date.now()).toBeGreaterThan(86_000_000);
    expect(rows[0]!.expires_at!.getTime() - Date.now()).toBeLessThanOrEqual(86_399_000);
    expect(linear.secretsIssued).toHaveLength(2);
    for (const secret of linear.secretsIssued) {
      expect(JSON.stringify(rows)).not.toContain(secret);
      expect(app.logLines.join('\n')).not.toContain(secret);
    }

    // A delegation in that workspace is answered with the installed token.
    const issue = linear.addIssue({
      id: 'i-1',
      identifier: 'ENG-1',
      title: 'Fix it',
      description: null,
      teamId: 't1',
      stateId: 's1',
    });
    const created = agentSessionCreated(linear, {
      agentSessionId: 'as-install',
      issue,
      creator: { id: 'u1', name: 'Ada', email: 'ada@acme.test' },
    });
    expect((await sendLinearWebhook(`${app.url}/linear/webhooks`, linearSecret, created)).status).toBe(200);
    const first = await linear.waitFor(() => linear.activitiesOf('as-install')[0], 'the first activity');
    expect(first.content.type).toBe('thought');
    // No repository anywhere and no GitHub App: it asks for a URL, with no options to offer.
    const question = await linear.waitFor(
      () => linear.activitiesOf('as-install').find((a) => a.content.type === 'elicitation'),
      'the repository question',
    );
    expect(question.content.body).toMatch(/Reply with its GitHub URL/);
    expect(question.signal).toBeUndefined();
    expect(linear.refused).toEqual([]);
  });
});
