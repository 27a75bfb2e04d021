import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../integrations/github/secret-box.ts';
import { createLinearStore } from '../../integrations/linear/linear-store.ts';
import { createLinearTokens, tokensToStore, type RefreshFailure } from '../../integrations/linear/linear-tokens.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { type ScriptedChaos, scriptedChaos } from '../fakes/scripted-chaos.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const box = createSecretBox('an-encryption-key-of-at-least-32-chars!!');
const redirectUri = 'http://patchbay.test/linear/oauth/callback';

/**
 * The token endpoint as it behaves under load and faults (fake Linear at the network boundary, the
 * real token holder and store on a real database): busy answers are waited out and retried, and the
 * refresh token is never given up for them; an answer lost after Linear spent the token is the one
 * case only a new install mends.
 */
describe('Linear token refresh under faults', () => {
  let linear: FakeLinear;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let failures: RefreshFailure[];
  let tokens: ReturnType<typeof createLinearTokens>;
  const chaos: ScriptedChaos = scriptedChaos();
  const store = () => createLinearStore(database.db);

  beforeAll(async () => {
    linear = await startFakeLinear({ chaos });
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await linear?.close();
    await database?.close();
  });

  /** An install, as the OAuth callback makes it: the code exchanged, the tokens stored sealed. */
  beforeEach(async () => {
    const authorize = new URL('https://linear.app/oauth/authorize');
    for (const [k, v] of Object.entries({
      client_id: linear.oauth.clientId,
      actor: 'app',
      redirect_uri: redirectUri,
      scope: 'read,write',
    }))
      authorize.searchParams.set(k, v);
    const code = new URL(linear.authorize(authorize.toString()).redirect).searchParams.get('code')!;
    const answer = await fetch(new URL('/oauth/token', linear.apiUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: linear.oauth.clientId,
        client_secret: linear.oauth.clientSecret,
      }),
    });
    const stored = tokensToStore(await answer.json(), box, Date.now())!;
    await store().saveInstallation({
      ...stored,
      organizationId: linear.organizationId,
      appUserId: linear.appUserId,
      scope: 'read,write',
    });
    failures = [];
    tokens = createLinearTokens({
      store: store(),
      box,
      endpoint: {
        tokenUrl: new URL('/oauth/token', linear.apiUrl).toString(),
        clientId: linear.oauth.clientId,
        clientSecret: linear.oauth.clientSecret,
      },
      log: pino({ level: 'silent' }),
      onRefreshFailed: async (failure) => void failures.push(failure),
    });
    linear.refused.length = 0;
    linear.tokenFaults.length = 0;
  });

  const current = async () => box.open((await store().installation(linear.organizationId))!.ciphertext);

  it('waits out a 429 with its Retry-After and a 503, and refreshes with the same refresh token', async () => {
    const before = await current();
    linear.failTokens({ status: 429, retryAfterSeconds: 1 }, { status: 503 });
    const started = Date.now();
    const fresh = await tokens.refused(linear.organizationId, before);
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(before);
    expect(await current()).toBe(fresh);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(linear.tokenFaults.map((f) => f.status)).toEqual([429, 503]);
    expect(failures).toEqual([]);
    expect(linear.refused).toEqual([]);
  }, 30_000);

  it('tries again after a connection dropped before any answer, and waits out a slow one', async () => {
    const before = await current();
    chaos.script({ 'linear oauth/token': ['dropped', 'slow'] });
    const fresh = await tokens.refused(linear.organizationId, before);
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(before);
    expect(await current()).toBe(fresh);
    expect(chaos.injected.map((f) => f.kind)).toEqual(['dropped', 'slow']);
    expect(failures).toEqual([]);
    expect(linear.refused).toEqual([]);
  }, 30_000);

  it('keeps the refresh token through a longer outage: a later refresh still works', async () => {
    const before = await current();
    linear.failTokens({ status: 502 }, { status: 502 }, { status: 502 });
    expect(await tokens.refused(linear.organizationId, before)).toBeUndefined();
    expect(failures).toEqual([]);
    expect(await current()).toBe(before);
    const fresh = await tokens.refused(linear.organizationId, before);
    expect(fresh).toBeDefined();
    expect(fresh).not.toBe(before);
    expect(linear.refused).toEqual([]);
  }, 30_000);

  it('an answer lost after Linear spent the refresh token ends in invalid_grant, reported once for a new install', async () => {
    const before = await current();
    linear.loseTokenAnswers(1);
    // The retry after the lost answer presents the spent token: Linear keeps no grace for it.
    expect(await tokens.refused(linear.organizationId, before)).toBeUndefined();
    expect(failures.map((f) => [f.reason, f.permanent])).toEqual([['invalid_grant', true]]);
    // Not asked again with the same refresh token.
    expect(await tokens.refused(linear.organizationId, before)).toBeUndefined();
    expect(failures).toHaveLength(1);
    expect(linear.refused.map((r) => r.message)).toEqual(['invalid_grant']);
  }, 30_000);
});
