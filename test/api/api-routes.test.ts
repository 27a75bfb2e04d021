import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, listenAddress, type ApiServer } from '../../src/api/server.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import { createApiFixture, type ApiFixture } from './api-fixture.ts';

describe('session API', () => {
  let fx: ApiFixture;
  let app: ApiServer;

  beforeAll(async () => {
    fx = await createApiFixture();
    app = fx.server({ publicUrl: 'https://patchbay.example.com/' });
  });
  afterAll(() => fx.close());

  const create = (body: unknown) => app.inject({ method: 'POST', url: '/api/sessions', payload: body as object });

  it('starts a session from the web and returns its id, status and page url', async () => {
    const res = await create({
      repo: 'https://github.com/o/r',
      prompt: 'Fix the flaky test\nmore detail',
      author: { name: 'Ada', email: 'ada@example.com' },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      id: expect.any(String),
      status: 'queued',
      url: `https://patchbay.example.com/sessions/${body.id}`,
    });
    const session = await fx.store.get(body.id);
    expect(session?.title).toBe('Fix the flaky test');
    expect(session?.requester).toEqual({ source: 'web', id: 'ada@example.com', name: 'Ada', email: 'ada@example.com' });
    expect(await fx.store.threads(body.id)).toEqual([{ source: 'web' }]);
  });

  it('names an anonymous caller "API user" and keeps the base branch', async () => {
    const res = await create({ repo: 'https://github.com/o/r', prompt: 'p', baseBranch: 'develop' });
    expect(res.statusCode).toBe(201);
    const session = await fx.store.get(res.json().id);
    expect(session?.requester).toEqual({ source: 'web', id: 'api', name: 'API user' });
    expect(session?.baseBranch).toBe('develop');
  });

  it('rejects a bad body with the zod issues', async () => {
    const res = await create({ repo: '', author: { name: 'x', email: 'not-an-email' } });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.error).toBe('invalid_input');
    const paths = body.issues.map((i: { path: string[] }) => i.path.join('.')).sort();
    expect(paths).toEqual(['author.email', 'prompt', 'repo']);
  });

  it('rejects malformed JSON without leaking a stack', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/sessions',
      headers: { 'content-type': 'application/json' },
      payload: '{"repo":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toMatch(/at .*\.(ts|js):\d+/);
  });

  it('lists sessions newest first and honours ?limit', async () => {
    const ids: string[] = [];
    for (const prompt of ['first', 'second', 'third'])
      ids.push((await create({ repo: 'https://github.com/o/list', prompt })).json().id);
    const all = (await app.inject({ url: '/api/sessions' })).json().sessions as { id: string }[];
    expect(all.slice(0, 3).map((s) => s.id)).toEqual(ids.reverse());
    const limited = await app.inject({ url: '/api/sessions?limit=2' });
    expect(limited.json().sessions).toHaveLength(2);
    expect((await app.inject({ url: '/api/sessions?limit=0' })).statusCode).toBe(400);
  });

  it('returns one session with its threads and usage, and 404 JSON for an unknown id', async () => {
    const { id } = (await create({ repo: 'https://github.com/o/r', prompt: 'get me' })).json();
    const res = await app.inject({ url: `/api/sessions/${id}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      id,
      status: 'queued',
      title: 'get me',
      threads: [{ source: 'web' }],
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
    });
    const missing = await app.inject({ url: '/api/sessions/nope' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: 'not_found', message: 'session nope does not exist' });
    expect((await app.inject({ url: '/api/sessions/nope/events?format=json' })).statusCode).toBe(404);
    expect((await app.inject({ url: '/api/nothing-here' })).statusCode).toBe(404);
  });

  it('estimates the session cost from its usage events, per model, and gives null when a price is unknown', async () => {
    const { id } = (await create({ repo: 'https://github.com/o/r', prompt: 'cost me' })).json();
    expect((await app.inject({ url: `/api/sessions/${id}` })).json().cost).toEqual({ usd: 0, byModel: [] });

    const usage = (turn: number, model: string, inputTokens: number, outputTokens: number, cacheReadTokens = 0) => ({
      event: { type: 'usage' as const, turn, model, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens: 0 },
    });
    // Sonnet 4.5 at $3 / $15 per million; GPT-5 at $1.25 in, $0.125 cached, $10 out.
    await fx.store.commitStep(id, {
      events: [usage(0, 'claude-sonnet-4-5', 600_000, 60_000), usage(1, 'claude-sonnet-4-5', 400_000, 40_000)],
    });
    await fx.store.commitStep(id, { events: [usage(2, 'openai/gpt-5', 200_000, 10_000, 100_000)] });
    const cost = (await app.inject({ url: `/api/sessions/${id}` })).json().cost as {
      usd: number;
      byModel: { model: string; usd: number }[];
    };
    expect(cost.usd).toBeCloseTo(4.5 + 0.125 + 0.0125 + 0.1, 9);
    expect(cost.byModel.map((m) => [m.model, Number(m.usd.toFixed(4))])).toEqual([
      ['claude-sonnet-4-5', 4.5],
      ['openai/gpt-5', 0.2375],
    ]);

    await fx.store.commitStep(id, { events: [usage(3, 'my-local-llama', 1_000, 100)] });
    const partial = (await app.inject({ url: `/api/sessions/${id}` })).json().cost as {
      usd: number | null;
      byModel: { model: string; usd: number | null }[];
    };
    expect(partial.usd).toBeNull();
    expect(partial.byModel.find((m) => m.model === 'my-local-llama')).toMatchObject({
      usd: null,
      usage: { inputTokens: 1_000, outputTokens: 100 },
    });
  });

  it('returns the event log as JSON for scripts, optionally after a seq', async () => {
    const { id } = (await create({ repo: 'https://github.com/o/r', prompt: 'events' })).json();
    await fx.store.append(id, [{ event: { type: 'assistant-message', text: 'on it', turn: 0 } }]);
    const all = (await app.inject({ url: `/api/sessions/${id}/events?format=json` })).json();
    expect(all.map((e: { seq: number; event: { type: string } }) => [e.seq, e.event.type])).toEqual([
      [1, 'session-created'],
      [2, 'user-message'],
      [3, 'assistant-message'],
    ]);
    const after = (await app.inject({ url: `/api/sessions/${id}/events?format=json&after=2` })).json();
    expect(after.map((e: { seq: number }) => e.seq)).toEqual([3]);
    expect((await app.inject({ url: `/api/sessions/${id}/events?format=json&after=-1` })).statusCode).toBe(400);
  });

  it('accepts a message with 202 and appends it with its author', async () => {
    const { id } = (await create({ repo: 'https://github.com/o/r', prompt: 'p' })).json();
    const res = await app.inject({
      method: 'POST',
      url: `/api/sessions/${id}/messages`,
      payload: { text: 'also update the docs', author: { name: 'Bo' } },
    });
    expect(res.statusCode).toBe(202);
    const last = (await fx.store.events(id)).at(-1)?.event;
    expect(last).toEqual({
      type: 'user-message',
      actor: { source: 'web', id: 'api', name: 'Bo' },
      text: 'also update the docs',
    });
    expect(
      (await app.inject({ method: 'POST', url: `/api/sessions/${id}/messages`, payload: { text: '' } })).statusCode,
    ).toBe(400);
    expect(
      (await app.inject({ method: 'POST', url: '/api/sessions/nope/messages', payload: { text: 'hi' } })).statusCode,
    ).toBe(404);
  });

  it('stops a queued session with 202 and answers 409 when there is nothing to stop', async () => {
    const { id } = (await create({ repo: 'https://github.com/o/r', prompt: 'p' })).json();
    const stop = await app.inject({ method: 'POST', url: `/api/sessions/${id}/stop` });
    expect(stop.statusCode).toBe(202);
    expect(stop.json()).toEqual({ id, status: 'cancelled' });
    const again = await app.inject({ method: 'POST', url: `/api/sessions/${id}/stop`, payload: {} });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({
      error: 'not_running',
      status: 'cancelled',
      message: expect.stringContaining('cancelled'),
    });
    expect((await app.inject({ method: 'POST', url: '/api/sessions/nope/stop' })).statusCode).toBe(404);
  });

  it('reports health from the database', async () => {
    const res = await app.inject({ url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true });
  });

  it('serves the page for the list and for a session, with a strict content security policy', async () => {
    for (const url of ['/', '/sessions/abc']) {
      const res = await app.inject({ url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.body).toContain('<div id="app">');
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['content-security-policy']).toContain("script-src 'self';");
      expect(res.headers['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      // Nothing from another origin, and no inline script or style the CSP would have to allow.
      expect(res.body).not.toMatch(/<(script|link)[^>]+(src|href)="(https?:)?\/\//);
      expect(res.body).not.toMatch(/<script>|<style>|style="/);
    }
    const page = (await app.inject({ url: '/' })).body;
    for (const [asset, type] of [
      ['app.js', /^text\/javascript/],
      ['app.css', /^text\/css/],
    ] as const) {
      const path = new RegExp(`/assets/${asset.replace('.', '\\.')}\\?v=[0-9a-f]{12}`).exec(page)?.[0];
      expect(path).toBeDefined();
      const res = await app.inject({ url: path! });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(type);
      expect(res.body.length).toBeGreaterThan(1000);
    }
  });
});

describe('API token', () => {
  let fx: ApiFixture;
  let app: ApiServer;
  const token = 'pb_test_token_123';

  beforeAll(async () => {
    fx = await createApiFixture();
    app = fx.server({ apiToken: token });
  });
  afterAll(() => fx.close());

  it('refuses /api routes without the bearer token and accepts them with it', async () => {
    const none = await app.inject({ url: '/api/sessions' });
    expect(none.statusCode).toBe(401);
    expect(none.json().error).toBe('unauthorized');
    const wrong = await app.inject({ url: '/api/sessions', headers: { authorization: `Bearer ${token}x` } });
    expect(wrong.statusCode).toBe(401);
    const prefix = await app.inject({
      url: '/api/sessions',
      headers: { authorization: `Bearer ${token.slice(0, -1)}` },
    });
    expect(prefix.statusCode).toBe(401);
    const basic = await app.inject({ url: '/api/sessions', headers: { authorization: `Basic ${token}` } });
    expect(basic.statusCode).toBe(401);
    const ok = await app.inject({ url: '/api/sessions', headers: { authorization: `Bearer ${token}` } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ sessions: [], repos: [] });
    // The router decodes paths; the check must follow the route, not the raw URL.
    expect((await app.inject({ url: '/%61pi/sessions' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/sessions/' })).statusCode).toBe(401);
    // Paths with no route have nothing behind them to protect; webhook routes check their own signatures.
    expect((await app.inject({ url: '/no-such-page' })).statusCode).toBe(404);
    const post = await app.inject({
      method: 'POST',
      url: '/api/sessions',
      payload: { repo: 'https://github.com/o/r', prompt: 'p' },
    });
    expect(post.statusCode).toBe(401);
    expect(await fx.store.list()).toEqual([]);
  });

  it('trades the token for an HttpOnly, SameSite=Strict cookie that opens the API until sign-out', async () => {
    expect((await app.inject({ url: '/api/auth' })).json()).toEqual({ required: true, signedIn: false, providers: [] });
    const wrong = await app.inject({ method: 'POST', url: '/api/auth', payload: { token: `${token}x` } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();

    const signIn = await app.inject({ method: 'POST', url: '/api/auth', payload: { token } });
    expect(signIn.statusCode).toBe(204);
    const setCookie = String(signIn.headers['set-cookie']);
    expect(setCookie).toMatch(/^patchbay_session=[\w-]{20,}; Path=\/; HttpOnly; SameSite=Strict$/);
    // A session cookie (no Max-Age or Expires), and never the token itself.
    expect(setCookie).not.toContain(token);
    const cookie = setCookie.split(';')[0]!;

    expect((await app.inject({ url: '/api/sessions', headers: { cookie } })).statusCode).toBe(200);
    expect((await app.inject({ url: '/api/sessions/nope/events?format=json', headers: { cookie } })).statusCode).toBe(
      404,
    );
    expect((await app.inject({ url: '/api/auth', headers: { cookie } })).json()).toEqual({
      required: true,
      signedIn: true,
      providers: [],
    });
    expect(
      (await app.inject({ url: '/api/sessions', headers: { cookie: `patchbay_session=${token}` } })).statusCode,
    ).toBe(401);
    expect((await app.inject({ url: '/api/sessions', headers: { cookie: `${cookie}x` } })).statusCode).toBe(401);

    const signOut = await app.inject({ method: 'DELETE', url: '/api/auth', headers: { cookie } });
    expect(signOut.statusCode).toBe(204);
    expect(String(signOut.headers['set-cookie'])).toMatch(/^patchbay_session=; .*Max-Age=0/);
  });

  it('leaves the health check and the page open', async () => {
    expect((await app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/' })).statusCode).toBe(200);
    expect((await app.inject({ url: '/sessions/abc' })).statusCode).toBe(200);
  });

  it('listens on loopback only without a token', () => {
    expect(listenAddress()).toBe('127.0.0.1');
    expect(listenAddress('')).toBe('127.0.0.1');
    expect(listenAddress(token)).toBe('0.0.0.0');
  });
});

describe('health check with the database gone', () => {
  it('answers 503', async () => {
    const fx = await createApiFixture();
    const app = fx.server();
    await fx.db.destroy();
    const res = await app.inject({ url: '/healthz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ ok: false, error: 'database_unavailable' });
    await fx.close();
  });
});

describe('errors from below', () => {
  let fx: ApiFixture;
  beforeAll(async () => {
    fx = await createApiFixture();
  });
  afterAll(() => fx.close());

  const failingServer = (error: Error) =>
    createServer({
      service: { ...fx.service, start: async () => Promise.reject(error) },
      store: fx.store,
      db: fx.db,
      bus: fx.bus,
      log: pino({ level: 'silent' }),
    });

  it('turns an unexpected error into a short 500 without the stack or message', async () => {
    const app = failingServer(new Error('password=hunter2 at /srv/internal/path.ts:12'));
    const res = await app.inject({
      method: 'POST',
      url: '/api/sessions',
      payload: { repo: 'https://github.com/o/r', prompt: 'p' },
    });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: 'internal', message: 'internal error' });
    await app.close();
  });

  it('maps coded errors to their status', async () => {
    const cases: [PatchbayError, number][] = [
      [new PatchbayError('invalid_input', 'repo is not a GitHub URL'), 400],
      [new PatchbayError('unauthorized', 'no access to o/r'), 401],
      [new PatchbayError('not_found', 'repo o/r not found'), 404],
      [new PatchbayError('sandbox_failed', 'bwrap: secret detail'), 500],
    ];
    for (const [error, status] of cases) {
      const app = failingServer(error);
      const res = await app.inject({
        method: 'POST',
        url: '/api/sessions',
        payload: { repo: 'https://github.com/o/r', prompt: 'p' },
      });
      expect(res.statusCode).toBe(status);
      expect(res.json()).toEqual({ error: error.code, message: status === 500 ? 'internal error' : error.message });
      await app.close();
    }
  });
});
