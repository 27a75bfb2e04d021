import { rm } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEgressAllow } from '../../sandbox/egress-policy.ts';
import { type EgressProxy, startEgressProxy } from '../../sandbox/egress-proxy.ts';
import { secretRequestRefusal } from '../../sandbox/secret-binding.ts';
import { normalizeSecretPath, withinPrefixes } from '../../sandbox/secret-path.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';
import { makeTempDir } from '../sandbox/sandbox-test-helpers.ts';

/** [raw path under the secret's base, the path forwarded] (issue 36, finding 5). */
const normalised: Array<[string, string]> = [
  ['/left-pad', '/left-pad'],
  ['/@scope%2fpkg', '/@scope/pkg'],
  ['/a//b///c', '/a/b/c'],
  ['/a/./b/', '/a/b/'],
  ['/a/b/../c', '/a/c'],
  ['/a\\b', '/a/b'],
  ['/a/%2e/b', '/a/b'],
  ['/a/b/..;/c', '/a/c'],
  ['/a;jsessionid=1/b', '/a/b'],
  ['/a%20b', '/a%20b'],
  ['/', '/'],
];
/** [raw path, why it is refused] */
const refused: Array<[string, RegExp]> = [
  ['/..;/admin', /climbs above/],
  ['/a/..;/..;/admin', /climbs above/],
  ['/..%2f..%2fadmin', /climbs above/],
  ['/%2e%2e/admin', /climbs above/],
  ['/..\\admin', /climbs above/],
  ['/..%5cadmin', /climbs above/],
  ['/a//..//..//admin', /climbs above/],
  ['/%252e%252e/admin', /doubly encoded/],
  ['/a%00b', /control/],
  ['/a%0d%0aX-Injected: 1', /control/],
  ['/%zz', /percent-encoding/],
];

describe('secrets broker: paths normalised before forwarding (pure)', () => {
  it.each(normalised)('forwards %s as %s', (raw, path) => {
    expect(normalizeSecretPath(raw)).toEqual({ ok: true, path });
  });
  it.each(refused)('refuses %s', (raw, reason) => {
    const result = normalizeSecretPath(raw);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(reason);
  });
  it('keeps a normalised path within its bound prefixes', () => {
    expect(withinPrefixes('/api/npm/left-pad', ['/api/npm/'])).toBe(true);
    expect(withinPrefixes('/api/npm', ['/api/npm/'])).toBe(true);
    expect(withinPrefixes('/api/npm-evil/x', ['/api/npm'])).toBe(false);
    expect(withinPrefixes('/api/pypi/x', ['/api/npm/'])).toBe(false);
  });
});

describe('secrets broker: each secret bound to methods and path prefixes (pure)', () => {
  const read = { paths: ['/api/npm/'] };
  const publish = { methods: ['GET', 'HEAD', 'PUT'], paths: ['/api/npm/'] };
  const table: Array<[string, typeof read, string, string, boolean, number | 'ok']> = [
    ['a read by default', read, 'GET', '/api/npm/left-pad', false, 'ok'],
    ['HEAD by default', read, 'HEAD', '/api/npm/left-pad', false, 'ok'],
    ['PUT not bound', read, 'PUT', '/api/npm/left-pad', true, 405],
    ['POST not bound', read, 'POST', '/api/npm/-/v1/login', false, 405],
    ['DELETE not bound', publish, 'DELETE', '/api/npm/left-pad', true, 405],
    ['a bound PUT with no approval', publish, 'PUT', '/api/npm/left-pad', false, 403],
    ['a bound PUT an approved publish sends', publish, 'PUT', '/api/npm/left-pad', true, 'ok'],
    ['a read outside the prefix', read, 'GET', '/api/pypi/x', false, 403],
    ['a climb out of the prefix with ..;/', read, 'GET', '/api/npm/..;/pypi/x', false, 403],
    ['an encoded climb out of the prefix', read, 'GET', '/api/npm/%2e%2e%2fpypi', false, 403],
  ];
  it.each(table)('%s', (_name, route, method, rawPath, granted, expected) => {
    const result = secretRequestRefusal(route, method, rawPath, granted);
    if (expected === 'ok') expect(result.ok).toBe(true);
    else expect(result).toMatchObject({ ok: false, status: expected });
  });
});

// Through the real proxy on its unix socket, to an upstream on loopback that records what reached it.
describe('secrets broker: through the real egress proxy', () => {
  let dir: string;
  let proxy: EgressProxy;
  let upstream: { port: number; close(): Promise<void> };
  const hits: Array<{ method?: string | undefined; url?: string | undefined; key?: string | undefined }> = [];

  beforeAll(async () => {
    dir = await makeTempDir('broker-bindings');
    upstream = await listenOnLoopback(
      createServer((req, res) => {
        hits.push({ method: req.method, url: req.url, key: req.headers.authorization });
        res.end('upstream-ok');
      }),
    );
    proxy = await startEgressProxy(path.join(dir, 'p.sock'), {
      policy: { rules: parseEgressAllow(`127.0.0.1:${upstream.port}`), protectedEndpoints: [] },
      secrets: [
        {
          name: 'registry',
          url: `http://127.0.0.1:${upstream.port}/artifactory/`,
          header: 'Authorization',
          value: 'Bearer registry-token',
          methods: ['GET', 'HEAD', 'PUT'],
          paths: ['/api/npm/'],
        },
      ],
      selfAuthority: { host: '127.0.0.1', port: 3128 },
      onBlocked: () => {},
      log: pino({ level: 'silent' }),
    });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  });

  const send = (method: string, target: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { socketPath: path.join(dir, 'p.sock'), method, path: target, headers: { host: '127.0.0.1:3128' } },
        (res) => {
          let body = '';
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(method === 'PUT' ? '{"name":"left-pad"}' : undefined);
    });

  it('refuses ..;/ out of the bound prefix (Tomcat reads it as ../) and sends nothing with the token', async () => {
    hits.length = 0;
    const result = await send('GET', '/secrets/registry/api/npm/..;/..;/api/system/configuration');
    expect(result.status).toBe(403);
    expect(result.body).toContain('outside the paths it is bound to');
    expect(hits).toEqual([]);
  });

  it('forwards a read inside the prefix in its normalised form, with the token', async () => {
    hits.length = 0;
    const result = await send('GET', '/secrets/registry/api/npm//@scope%2fpkg');
    expect(result).toEqual({ status: 200, body: 'upstream-ok' });
    expect(hits).toEqual([{ method: 'GET', url: '/artifactory/api/npm/@scope/pkg', key: 'Bearer registry-token' }]);
  });

  it('refuses a bound write unless a publish approved by a person runs, and forwards it while one does', async () => {
    hits.length = 0;
    const refusedWrite = await send('PUT', '/secrets/registry/api/npm/left-pad');
    expect(refusedWrite.status).toBe(403);
    expect(refusedWrite.body).toContain('approved as publishing');
    expect(hits).toEqual([]);
    const release = proxy.grantWrites();
    const granted = await send('PUT', '/secrets/registry/api/npm/left-pad');
    release();
    expect(granted.status).toBe(200);
    expect(hits).toEqual([{ method: 'PUT', url: '/artifactory/api/npm/left-pad', key: 'Bearer registry-token' }]);
    expect((await send('PUT', '/secrets/registry/api/npm/left-pad')).status).toBe(403);
    expect((await send('DELETE', '/secrets/registry/api/npm/left-pad')).status).toBe(405);
    expect(hits).toHaveLength(1);
  });
});
