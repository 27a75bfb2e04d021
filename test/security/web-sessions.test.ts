import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crossSiteRefusal, PAGE_REQUEST_HEADER } from '../../src/api/cross-site.ts';
import { createPageSignIns } from '../../src/api/page-sessions.ts';
import { createServer, type ApiServer } from '../../src/api/server.ts';
import { loadConfig } from '../../src/config.ts';
import { createApiFixture, type ApiFixture } from '../api/api-fixture.ts';

const token = 'web-sessions-api-token-0123456789';
const HOUR = 60 * 60_000;

// Findings 8 and 9: the page's sign-in is a server-side session that sign-out and time end, and no
// page on another site can change anything, with or without PATCHBAY_API_TOKEN.
describe('web sessions: server-side, revocable, expiring', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  let clock = Date.parse('2026-12-01T09:00:00Z');

  beforeAll(async () => {
    fx = await createApiFixture();
    // The real server, with the page sessions on the fixture's database and a clock the test moves.
    const pageSignIns = createPageSignIns({ db: fx.db, token, secure: false, now: () => clock });
    app = createServer({
      service: fx.service,
      store: fx.store,
      db: fx.db,
      bus: fx.bus,
      log: pino({ level: 'silent' }),
      apiToken: token,
      pageSignIns,
    });
  });
  afterAll(async () => {
    await app?.close();
    await fx?.close();
  });

  const signIn = async () => {
    const res = await app.inject({ method: 'POST', url: '/api/auth', payload: { token } });
    expect(res.statusCode).toBe(204);
    return String(res.headers['set-cookie']).split(';')[0]!;
  };
  const list = (cookie: string) => app.inject({ url: '/api/sessions', headers: { cookie } });

  it('gives every sign-in its own cookie, never a value derived from the token', async () => {
    const first = await signIn();
    const second = await signIn();
    expect(first).not.toBe(second);
    expect((await list(first)).statusCode).toBe(200);
    expect((await list(second)).statusCode).toBe(200);
  });

  it('ends the session on the server at sign-out: the same cookie, replayed, opens nothing', async () => {
    const cookie = await signIn();
    const other = await signIn();
    const out = await app.inject({
      method: 'DELETE',
      url: '/api/auth',
      headers: { cookie, origin: 'http://localhost:80', host: 'localhost:80', [PAGE_REQUEST_HEADER]: '1' },
    });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toMatch(/^patchbay_session=; .*Max-Age=0/);
    expect((await list(cookie)).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/auth', headers: { cookie } })).json()).toMatchObject({ signedIn: false });
    // Only that browser's session ends.
    expect((await list(other)).statusCode).toBe(200);
  });

  it('expires after 12 hours by default', async () => {
    const cookie = await signIn();
    clock += 12 * HOUR - 1000;
    expect((await list(cookie)).statusCode).toBe(200);
    clock += 2000;
    expect((await list(cookie)).statusCode).toBe(401);
  });

  it('takes WEB_SESSION_HOURS from the environment (12 unless set)', () => {
    expect(loadConfig({}).webSessionHours).toBe(12);
    expect(loadConfig({ WEB_SESSION_HOURS: '2' }).webSessionHours).toBe(2);
    expect(() => loadConfig({ WEB_SESSION_HOURS: 'soon' })).toThrow(/WEB_SESSION_HOURS/);
  });
});

describe('cross-site requests are refused on every state-changing route', () => {
  let fx: ApiFixture;
  let open: ApiServer;
  let guarded: ApiServer;

  beforeAll(async () => {
    fx = await createApiFixture();
    open = fx.server({});
    guarded = fx.server({ apiToken: token });
  });
  afterAll(() => fx?.close());

  const queuedSession = async () => {
    const started = await fx.service.start({
      thread: { source: 'web' },
      actor: { source: 'web', id: 'ada', name: 'Ada' },
      text: 'Fix it',
      repo: 'https://github.com/o/r',
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    return started.session.id;
  };
  const evil = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' };

  it('without PATCHBAY_API_TOKEN: another site cannot stop a session (a form post, a no-cors fetch)', async () => {
    const id = await queuedSession();
    for (const headers of [
      evil,
      { origin: 'https://evil.example', 'content-type': 'text/plain' },
      { 'sec-fetch-site': 'same-site', 'content-type': 'text/plain' },
      { origin: 'null', 'content-type': 'text/plain' },
    ]) {
      const res = await open.inject({
        method: 'POST',
        url: `/api/sessions/${id}/stop`,
        headers: { host: 'localhost:3000', ...headers },
        payload: '{}',
      });
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
      expect(res.json()).toMatchObject({ error: 'cross_site' });
    }
    expect((await fx.store.get(id))?.status).toBe('queued');
    const created = await open.inject({
      method: 'POST',
      url: '/api/sessions',
      headers: { host: 'localhost:3000', ...evil },
      payload: JSON.stringify({ repo: 'https://github.com/o/r', prompt: 'p' }),
    });
    expect(created.statusCode).toBe(403);
  });

  it('without PATCHBAY_API_TOKEN: a same-origin browser request needs the page header too', async () => {
    const id = await queuedSession();
    const sameOrigin = { host: 'localhost:3000', origin: 'http://localhost:3000', 'sec-fetch-site': 'same-origin' };
    const bare = await open.inject({
      method: 'POST',
      url: `/api/sessions/${id}/stop`,
      headers: sameOrigin,
      payload: {},
    });
    expect(bare.statusCode).toBe(403);
    expect((await fx.store.get(id))?.status).toBe('queued');
    const page = await open.inject({
      method: 'POST',
      url: `/api/sessions/${id}/stop`,
      headers: { ...sameOrigin, [PAGE_REQUEST_HEADER]: '1' },
      payload: {},
    });
    expect(page.statusCode).toBe(202);
    expect((await fx.store.get(id))?.status).toBe('cancelled');
  });

  it('with PATCHBAY_API_TOKEN: a signed-in cookie does not let another site start, stop, sign in or sign out', async () => {
    const signIn = await guarded.inject({ method: 'POST', url: '/api/auth', payload: { token } });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0]!;
    const id = await queuedSession();
    const headers = { host: 'patchbay.example:3000', cookie, ...evil };
    const before = (await fx.store.list()).length;
    expect(
      (
        await guarded.inject({
          method: 'POST',
          url: '/api/sessions',
          headers,
          payload: JSON.stringify({ repo: 'https://github.com/o/r', prompt: 'p' }),
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (await guarded.inject({ method: 'POST', url: `/api/sessions/${id}/stop`, headers, payload: '{}' })).statusCode,
    ).toBe(403);
    expect(
      (
        await guarded.inject({
          method: 'PUT',
          url: `/api/repos/${encodeURIComponent('https://github.com/o/r')}/knowledge`,
          headers,
          payload: '{}',
        })
      ).statusCode,
    ).toBe(403);
    expect(
      (await guarded.inject({ method: 'POST', url: '/api/auth', headers, payload: JSON.stringify({ token }) }))
        .statusCode,
    ).toBe(403);
    expect((await guarded.inject({ method: 'DELETE', url: '/api/auth', headers })).statusCode).toBe(403);
    expect((await fx.store.list()).length).toBe(before);
    expect((await fx.store.get(id))?.status).toBe('queued');
    // The sign-out that was refused left the session working.
    expect((await guarded.inject({ url: '/api/sessions', headers: { cookie } })).statusCode).toBe(200);
  });

  it('leaves API clients without browser headers (the CLI, curl) to their bearer token', async () => {
    const id = await queuedSession();
    const res = await guarded.inject({
      method: 'POST',
      url: `/api/sessions/${id}/stop`,
      headers: { authorization: `Bearer ${token}` },
      payload: {},
    });
    expect(res.statusCode).toBe(202);
  });

  it.each([
    ['GET', {}, undefined],
    ['POST', {}, undefined],
    ['POST', { origin: 'http://localhost:3000', [PAGE_REQUEST_HEADER]: '1' }, undefined],
    ['POST', { origin: 'https://patchbay.example.com', [PAGE_REQUEST_HEADER]: '1' }, undefined],
    ['POST', { 'sec-fetch-site': 'same-origin', [PAGE_REQUEST_HEADER]: '1' }, undefined],
    ['POST', { 'sec-fetch-site': 'same-origin' }, /header/],
    ['DELETE', { 'sec-fetch-site': 'cross-site', [PAGE_REQUEST_HEADER]: '1' }, /another site/],
    ['PUT', { 'sec-fetch-site': 'same-site', [PAGE_REQUEST_HEADER]: '1' }, /another site/],
    ['POST', { 'sec-fetch-site': 'none', [PAGE_REQUEST_HEADER]: '1' }, /another site/],
    ['POST', { origin: 'http://localhost:3001', [PAGE_REQUEST_HEADER]: '1' }, /not this server/],
    ['POST', { origin: 'null', [PAGE_REQUEST_HEADER]: '1' }, /not this server/],
  ] as const)('%s with %j', (method, headers, expected) => {
    const refusal = crossSiteRefusal({
      method,
      headers: { ...headers },
      ownHosts: ['localhost:3000', 'patchbay.example.com'],
    });
    if (expected === undefined) expect(refusal).toBeUndefined();
    else expect(refusal).toMatch(expected);
  });
});
