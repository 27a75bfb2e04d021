import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook } from '../fakes/linear/fake-linear-webhooks.ts';
import { linearSecret, startLinearPatchbay, type LinearPatchbay } from '../linear/linear-fixture.ts';

const OTHER_ORG = 'a1b2c3d4-0000-4000-8000-00000000beef';
const oauthEnv = (linear: FakeLinear) => ({
  LINEAR_ACCESS_TOKEN: '',
  LINEAR_CLIENT_ID: linear.oauth.clientId,
  LINEAR_CLIENT_SECRET: linear.oauth.clientSecret,
  PATCHBAY_SECRET_KEY: 'an-encryption-key-of-at-least-32-chars!!',
});

/** The admin's way through the install: start, approve on Linear, the callback. */
async function install(app: LinearPatchbay, linear: FakeLinear): Promise<Response> {
  const start = await fetch(`${app.url}/linear/oauth/start`, { redirect: 'manual' });
  const back = new URL(linear.authorize(start.headers.get('location')!).redirect);
  return fetch(`${app.url}/linear/oauth/callback${back.search}`, {
    headers: { cookie: (start.headers.get('set-cookie') ?? '').split(';')[0]! },
  });
}

// Any Linear workspace that installs the app would run sessions on the operator's model budget:
// LINEAR_ALLOWED_ORGS limits it, and without it the installer and the log say so.
describe('tenancy: Linear workspaces limited to LINEAR_ALLOWED_ORGS', () => {
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
      ...oauthEnv(linear),
      LINEAR_ACCESS_TOKEN: linear.accessToken,
      LINEAR_ALLOWED_ORGS: OTHER_ORG,
    });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await linear?.close();
  });

  it('refuses to install in a workspace not on the list, and stores no token', async () => {
    const callback = await install(app, linear);
    expect(callback.status).toBe(403);
    expect(await callback.text()).toMatch(/LINEAR_ALLOWED_ORGS.*Nothing was installed/s);
    expect(await app.database.db.selectFrom('linear_installations').selectAll().execute()).toEqual([]);
  });

  it('takes a signed webhook from such a workspace and does nothing with it: no session, no activity', async () => {
    const issue = linear.addIssue({
      id: 'i-1',
      identifier: 'ENG-1',
      title: 'Fix it',
      description: null,
      teamId: 't1',
      stateId: 's1',
    });
    const created = agentSessionCreated(linear, {
      agentSessionId: 'as-foreign',
      issue,
      creator: { id: 'u1', name: 'Ada', email: 'ada@acme.test' },
    });
    const res = await sendLinearWebhook(`${app.url}/linear/webhooks`, linearSecret, created);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({ ok: false, ignored: expect.stringContaining('LINEAR_ALLOWED_ORGS') });
    expect(
      await app.database.db.selectFrom('inbound_deliveries').selectAll().where('source', '=', 'linear').execute(),
    ).toEqual([]);
    expect(await app.store.list()).toEqual([]);
    expect(linear.activitiesOf('as-foreign')).toEqual([]);
    expect(linear.refused).toEqual([]);
  });

  it('reads LINEAR_ALLOWED_ORGS from the environment', () => {
    const base = { LINEAR_WEBHOOK_SECRET: 's', LINEAR_ACCESS_TOKEN: 't' };
    expect(loadConfig({ ...base, LINEAR_ALLOWED_ORGS: `${OTHER_ORG}, org-2` }).linear?.allowedOrgs).toEqual([
      OTHER_ORG,
      'org-2',
    ]);
    expect(loadConfig(base).linear?.allowedOrgs).toBeUndefined();
    expect(() => loadConfig({ ...base, LINEAR_ALLOWED_ORGS: 'not an id!' })).toThrow(/LINEAR_ALLOWED_ORGS/);
  });
});

describe('tenancy: without LINEAR_ALLOWED_ORGS the installer is told', () => {
  let linear: FakeLinear;
  let app: LinearPatchbay;

  beforeAll(async () => {
    linear = await startFakeLinear();
    app = await startLinearPatchbay(
      { linear },
      createScriptedProvider({ scenario: [{ text: 'unused' }] }),
      oauthEnv(linear),
    );
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await linear?.close();
  });

  it('binds the install to the browser that started it: a callback elsewhere installs nothing', async () => {
    const start = await fetch(`${app.url}/linear/oauth/start`, { redirect: 'manual' });
    const back = new URL(linear.authorize(start.headers.get('location')!).redirect);
    // The admin's authorize link (or Linear's redirect back) opened in another browser.
    const elsewhere = await fetch(`${app.url}/linear/oauth/callback${back.search}`);
    expect(elsewhere.status).toBe(400);
    expect(await elsewhere.text()).toMatch(/browser where you started it/);
    const other = await fetch(`${app.url}/linear/oauth/start`, { redirect: 'manual' });
    const otherCookie = (other.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(
      (await fetch(`${app.url}/linear/oauth/callback${back.search}`, { headers: { cookie: otherCookie } })).status,
    ).toBe(400);
    expect(await app.database.db.selectFrom('linear_installations').selectAll().execute()).toEqual([]);
  });

  it('warns at start and on install, naming the setting with this workspace’s id', async () => {
    const warnings = () =>
      app.logLines
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((l) => l.level === 40 && l.msg.includes('LINEAR_ALLOWED_ORGS is not set'));
    expect(warnings()).toHaveLength(1);
    const callback = await install(app, linear);
    expect(callback.status).toBe(200);
    expect(await callback.text()).toContain(`set LINEAR_ALLOWED_ORGS=${linear.organizationId}`);
    expect(warnings()).toHaveLength(2);
    expect(await app.database.db.selectFrom('linear_installations').selectAll().execute()).toHaveLength(1);
  });
});
