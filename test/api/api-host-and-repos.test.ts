import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../../src/api/host-check.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';

type Answer = { status: number; body: string };

/** A request to the server with a Host header of our choosing (fetch will not set one). */
function send(
  base: string,
  method: string,
  path: string,
  host: string,
  body?: unknown,
  token?: string,
): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        headers: {
          host,
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...(token && { authorization: `Bearer ${token}` }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('API without a token: loopback names only, and no server paths unless allowed', () => {
  let app: PatchbayFixture | undefined;
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });

  it('refuses API requests addressed to another name (DNS rebinding) and serves loopback names', async () => {
    app = await startTestPatchbay({ serve: true });
    const base = app.url!;
    const port = new URL(base).port;
    for (const host of [
      `attacker.example:${port}`,
      'attacker.example',
      `127.0.0.1.attacker.example:${port}`,
      `localhost.attacker.example`,
      `10.0.0.5:${port}`,
    ]) {
      const list = await send(base, 'GET', '/api/sessions', host);
      expect(list.status, host).toBe(403);
      expect(JSON.parse(list.body)).toMatchObject({ error: 'forbidden_host' });
      const create = await send(base, 'POST', '/api/sessions', host, { repo: 'https://github.com/o/r', prompt: 'p' });
      expect(create.status, host).toBe(403);
    }
    expect(await app.store.list({ limit: 10 })).toEqual([]);
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'LOCALHOST.',
      `app.localhost:${port}`,
    ]) {
      expect((await send(base, 'GET', '/api/sessions', host)).status, host).toBe(200);
    }
    // Signed webhooks and the health check are not the API; they answer whatever the name.
    expect((await send(base, 'GET', '/healthz', 'attacker.example')).status).toBe(200);
  });

  it('refuses a repository path on the server disk over the API unless PATCHBAY_ALLOW_LOCAL_REPOS=true', async () => {
    app = await startTestPatchbay({ serve: true });
    for (const repo of ['/srv/secret-repo', './relative/repo', 'o/r', 'file:///srv/secret-repo']) {
      const refused = await send(app.url!, 'POST', '/api/sessions', 'localhost', { repo, prompt: 'p' });
      expect(refused.status, repo).toBe(400);
      expect(JSON.parse(refused.body).message, repo).toMatch(
        /is a path on the server's disk, which the API accepts only with PATCHBAY_ALLOW_LOCAL_REPOS=true/,
      );
    }
    expect(await app.store.list({ limit: 10 })).toEqual([]);
    const url = await send(app.url!, 'POST', '/api/sessions', 'localhost', {
      repo: 'https://github.com/o/r',
      prompt: 'p',
    });
    expect(url.status).toBe(201);
    await app.dispose();

    app = await startTestPatchbay({ serve: true, env: { PATCHBAY_ALLOW_LOCAL_REPOS: 'true' } });
    // A path that is not there is this request's 400, not a session that fails a second later.
    const missing = await send(app.url!, 'POST', '/api/sessions', 'localhost', {
      repo: '/srv/secret-repo',
      prompt: 'p',
    });
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.body).message).toBe(
      '"/srv/secret-repo" is not a directory on the server: check the path',
    );
    expect(await app.store.list({ limit: 10 })).toEqual([]);
    const allowed = await send(app.url!, 'POST', '/api/sessions', 'localhost', { repo: app.dataDir, prompt: 'p' });
    expect(allowed.status).toBe(201);
  });

  it('refuses at the request, with the reason, what would only fail after a 201', async () => {
    app = await startTestPatchbay({ serve: true });
    const cases: [Record<string, string>, RegExp][] = [
      [
        { repo: 'https://' },
        /^"https:\/\/" is not a repository: it is not a complete URL\. Use https:\/\/host\/owner\/repo/,
      ],
      [{ repo: 'https://github.com/' }, /is not a repository: it names a host but no repository \(owner\/repo\)/],
      [{ repo: 'ssh://' }, /is not a repository: it names no host/],
      [{ repo: 'https://github.com/o/r', baseBranch: 'main..x' }, /^baseBranch: is not a valid branch name/],
      [{ repo: 'https://github.com/o/r', baseBranch: '-x' }, /^baseBranch: is not a valid branch name/],
    ];
    for (const [body, message] of cases) {
      const refused = await send(app.url!, 'POST', '/api/sessions', 'localhost', { ...body, prompt: 'p' });
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(JSON.parse(refused.body).message, JSON.stringify(body)).toMatch(message);
    }
    expect(await app.store.list({ limit: 10 })).toEqual([]);
  });

  it('with a token, the token decides and any Host is served', async () => {
    const token = 'tok-0123456789abcdef';
    app = await startTestPatchbay({ serve: true, env: { PATCHBAY_API_TOKEN: token } });
    const base = app.url!.replace('0.0.0.0', '127.0.0.1');
    expect((await send(base, 'GET', '/api/sessions', 'patchbay.example.org', undefined, token)).status).toBe(200);
    expect((await send(base, 'GET', '/api/sessions', 'patchbay.example.org')).status).toBe(401);
  });

  it('isLoopbackHost', () => {
    const table: Array<[string | undefined, boolean]> = [
      ['localhost', true],
      ['localhost:3000', true],
      ['127.0.0.1:1', true],
      ['127.8.9.10', true],
      ['[::1]:3000', true],
      ['x.localhost', true],
      ['localhost.evil.example', false],
      ['127.0.0.1.nip.io', false],
      ['[::ffff:7f00:1]', false],
      ['0.0.0.0', false],
      ['', false],
      [undefined, false],
    ];
    for (const [host, expected] of table) expect(isLoopbackHost(host), String(host)).toBe(expected);
    expect(isLoopbackHost('patchbay.internal:8080', ['patchbay.internal:3000'])).toBe(true);
  });
});
