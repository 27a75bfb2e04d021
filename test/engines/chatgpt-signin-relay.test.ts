import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../integrations/github/secret-box.ts';
import { runSignInCommand } from '../../src/cli/codex-signin-cli.ts';
import { checkCodexSignIn } from '../../src/cli/doctor-codex-signin.ts';
import { loadConfig } from '../../src/config.ts';
import { createChatGPTSignIn, sealSignIn } from '../../src/engines/chatgpt-signin.ts';
import { parseCodexAuthJson } from '../../src/engines/chatgpt-tokens.ts';
import { type RunningEngineRelay, startEngineRelay } from '../../src/engines/engine-relay.ts';
import { createCodexSignInStore } from '../../src/sessions/store/codex-signin-store.ts';
import { type FakeOpenAI, startFakeOpenAI } from '../fakes/fake-openai.ts';
import { type AuthDotJson, type FakeOpenAIAuth, startFakeOpenAIAuth } from '../fakes/fake-openai-auth.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { textSink } from '../helpers/text-sink.ts';
import { waitFor } from '../helpers/wait-for.ts';

const box = createSecretBox('an-encryption-key-of-at-least-32-chars!!');
const ada = { accountId: 'acct-ada-0001', email: 'ada@example.com' };
const bob = { accountId: 'acct-bob-0002', email: 'bob@example.com' };
const log = pino({ level: 'silent' });

/**
 * The relay with a ChatGPT sign-in kept in real PostgreSQL, against the loopback auth.openai.com
 * and ChatGPT backend: a token the backend refuses is refreshed and the call sent again, and
 * processes that find the token due at once refresh it once between them (a second grant would
 * spend a spent refresh token, which OpenAI refuses).
 */
describe('ChatGPT sign-in at the relay', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let auth: FakeOpenAIAuth;
  let backend: FakeOpenAI;
  let relay: RunningEngineRelay;
  const store = () => createCodexSignInStore(database.db);
  const signIn = () =>
    createChatGPTSignIn({ store: store(), box, endpoint: { tokenUrl: `${auth.url}/oauth/token` }, log });
  const save = (json: AuthDotJson) => store().put(sealSignIn(box, parseCodexAuthJson(JSON.stringify(json))));

  beforeAll(async () => {
    database = await createTestDatabase();
    auth = await startFakeOpenAIAuth({ accessSeconds: 3600, grantDelayMs: 300 });
    backend = await startFakeOpenAI({
      pathPrefix: '/backend-api/codex',
      authorize: (headers) => auth.authorize(headers),
      responses: () => ({ text: 'hello' }),
    });
    relay = await startEngineRelay({
      upstreams: {
        openai: { baseUrl: backend.baseUrl, model: 'gpt-5.5', headers: {}, unversioned: true, signIn: signIn() },
      },
      runLog: { commitStep: async () => [] },
      log,
      sandboxUrl: (url) => url,
    });
  });
  afterAll(async () => {
    await relay?.close();
    await backend?.close();
    await auth?.close();
    await database?.close();
  });
  beforeEach(() => {
    auth.grants.length = 0;
    auth.refused.length = 0;
    backend.rejections.length = 0;
  });

  const respond = async () => {
    const lease = relay.open({
      sessionId: 's-1',
      engine: 'codex',
      api: 'openai',
      firstTurn: 0,
      maxCostUsd: 100,
      signal: new AbortController().signal,
    });
    try {
      const res = await fetch(`${lease.access.baseUrl}/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${lease.access.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-5.5', input: 'hi', stream: true, store: false }),
      });
      return { status: res.status, body: await res.text(), stopped: lease.stopped() };
    } finally {
      lease.close();
    }
  };

  it('a token the backend refuses before its expiry is refreshed once and the call sent again', async () => {
    const json = auth.signIn(ada, 3600);
    await save(json);
    auth.expire(json.tokens.access_token);
    const first = await respond();
    expect(first.status).toBe(200);
    expect(first.body).toContain('response.completed');
    expect(backend.rejections).toHaveLength(1);
    expect(auth.grants).toEqual([{ status: 200, refreshToken: json.tokens.refresh_token }]);
    const used = backend.calls.at(-1)!.headers;
    expect(used['chatgpt-account-id']).toBe(ada.accountId);
    expect(used.authorization).not.toBe(`Bearer ${json.tokens.access_token}`);
    // The new token is the stored one now: the next call needs no refresh.
    expect((await respond()).status).toBe(200);
    expect(auth.grants).toHaveLength(1);
    expect(backend.rejections).toHaveLength(1);
  });

  it('two processes that find the token due at once refresh it once between them', async () => {
    const json = auth.signIn(ada, -60);
    await save(json);
    const [a, b] = await Promise.all([
      signIn().headers(new AbortController().signal),
      signIn().headers(new AbortController().signal),
    ]);
    expect(a).toEqual(b);
    expect(a.authorization).not.toBe(`Bearer ${json.tokens.access_token}`);
    expect(auth.grants).toEqual([{ status: 200, refreshToken: json.tokens.refresh_token }]);
    expect(auth.refused).toEqual([]);
  });

  it('a refused refresh stops the run with the reason, and the backend is not called', async () => {
    const json = auth.signIn(ada, -60);
    await save(json);
    auth.revoke(json.tokens.refresh_token);
    const calls = backend.calls.length;
    const answer = await respond();
    expect(answer.status).toBe(401);
    expect(answer.stopped).toEqual({
      kind: 'failed',
      code: 'unauthorized',
      message: expect.stringMatching(/refresh token was revoked.*codex-import/),
    });
    expect(backend.calls.length).toBe(calls);
    expect((await store().read())?.refusedReason).toBe('its refresh token was revoked');
  });

  it('codex-login signs in by a device code the person enters elsewhere, and the relay then uses that account', async () => {
    const config = loadConfig({
      DATABASE_URL: database.url,
      DATA_DIR: join(tmpdir(), 'patchbay-codex-login'),
      CODEX_AUTH: 'chatgpt',
      PATCHBAY_SECRET_KEY: 'an-encryption-key-of-at-least-32-chars!!',
      OPENAI_AUTH_URL: auth.url,
    });
    const out = textSink();
    const login = runSignInCommand({ action: 'codex-login' }, { config, log, out: out.stream, pollMs: 50 });
    const code = await waitFor(async () => /enter this code[^:]*: (\S+)/.exec(out.text())?.[1], 'the device code');
    expect(out.text()).toContain(`Open ${auth.url}/codex/device`);
    auth.approve(code, bob);
    expect(await login).toBe(0);
    expect(out.text()).toContain('Stored the ChatGPT sign-in of bob@example.com acct-bob-0002');
    const answer = await respond();
    expect(answer.status).toBe(200);
    expect(backend.calls.at(-1)!.headers['chatgpt-account-id']).toBe(bob.accountId);
    expect(auth.refused).toEqual([]);
  });

  it("doctor's row says whether a sign-in is stored, whose, and whether OpenAI refused it, never a token", async () => {
    const config = loadConfig({
      DATABASE_URL: database.url,
      CODEX_AUTH: 'chatgpt',
      PATCHBAY_SECRET_KEY: 'an-encryption-key-of-at-least-32-chars!!',
    });
    const row = () => checkCodexSignIn({ config, log, signal: AbortSignal.timeout(10_000) });
    await store().remove();
    expect(await row()).toMatchObject({ ok: false, detail: 'CODEX_AUTH=chatgpt, but no sign-in is stored' });
    const json = auth.signIn(ada, 3600);
    await save(json);
    const signedIn = await row();
    expect(signedIn).toMatchObject({
      ok: true,
      detail: expect.stringContaining('ada@example.com (ChatGPT account acct-ada-0001)'),
    });
    for (const token of Object.values(json.tokens))
      if (token.length > 20) expect(JSON.stringify(signedIn)).not.toContain(token);
    await store().withLocked(async (found) => ({
      save: { ...found!, refusedReason: 'its refresh token was revoked' },
      result: undefined,
    }));
    expect(await row()).toMatchObject({
      ok: false,
      detail: expect.stringContaining('no longer works: its refresh token was revoked'),
    });
  });

  it.each([
    ['not JSON', 'that file is not JSON'],
    [JSON.stringify({ OPENAI_API_KEY: 'sk-proj-abc', tokens: null }), 'holds no ChatGPT sign-in'],
  ])('an auth.json that is %s is refused with a reason that does not quote it', (text, reason) => {
    expect(() => parseCodexAuthJson(text)).toThrow(reason);
    try {
      parseCodexAuthJson(text);
    } catch (error) {
      expect((error as Error).message).not.toContain('sk-proj-abc');
    }
  });
});
