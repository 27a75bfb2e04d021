import { rm } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEgressAllow } from '../../sandbox/egress-policy.ts';
import { type EgressBlock, type EgressProxy, startEgressProxy } from '../../sandbox/egress-proxy.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';
import { makeTempDir } from '../sandbox/sandbox-test-helpers.ts';

// Findings 6 and 7 and the per-port report: the proxy on its unix socket, an upstream on loopback
// that records what reached it (Host header, path, credential), and host DNS replaced by a table.
describe('egress proxy: the checked Host, a secrets path that cannot climb, refusals per host and port', () => {
  let dir: string;
  let proxy: EgressProxy;
  let upstream: { port: number; close(): Promise<void> };
  const hits: Array<{ host?: string | undefined; url?: string | undefined; key?: string | undefined }> = [];
  const blocks: EgressBlock[] = [];

  beforeAll(async () => {
    dir = await makeTempDir('proxy-security');
    upstream = await listenOnLoopback(
      createServer((req, res) => {
        hits.push({ host: req.headers.host, url: req.url, key: req.headers['x-api-key'] as string | undefined });
        res.end('upstream-ok');
      }),
    );
    proxy = await startEgressProxy(path.join(dir, 'p.sock'), {
      policy: {
        rules: parseEgressAllow(`pinned.example:${upstream.port},pinned.example,127.0.0.1:${upstream.port}`),
        protectedEndpoints: [],
      },
      secrets: [
        {
          name: 'api',
          url: `http://127.0.0.1:${upstream.port}/v1/projects/mine/`,
          header: 'x-api-key',
          value: 'secret-value',
        },
      ],
      selfAuthority: { host: '127.0.0.1', port: 3128 },
      onBlocked: (block) => blocks.push(block),
      log: pino({ level: 'silent' }),
      resolve: async (host) => {
        if (host !== 'pinned.example') throw new Error(`ENOTFOUND ${host}`);
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  });

  const send = (target: string, host: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ socketPath: path.join(dir, 'p.sock'), path: target, headers: { host } }, (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });

  it('sets Host to the checked target, whatever Host the sandbox sent', async () => {
    hits.length = 0;
    const result = await send(`http://pinned.example:${upstream.port}/a`, 'internal-admin.example');
    expect(result).toEqual({ status: 200, body: 'upstream-ok' });
    expect(hits).toEqual([{ host: `pinned.example:${upstream.port}`, url: '/a', key: undefined }]);
  });

  it('forwards a plain secrets path below the route base, with the credential', async () => {
    hits.length = 0;
    const result = await send('/secrets/api/items//42?x=1', '127.0.0.1:3128');
    expect(result.status).toBe(200);
    expect(hits).toEqual([
      { host: `127.0.0.1:${upstream.port}`, url: '/v1/projects/mine/items/42?x=1', key: 'secret-value' },
    ]);
  });

  const climbs = [
    '/secrets/api/..%2f..%2fother/keys',
    '/secrets/api/..%2F..%2Fother',
    '/secrets/api/%2e%2e/%2e%2e/other',
    '/secrets/api/.%2e/other',
    '/secrets/api/..\\..\\other',
    '/secrets/api/..%5c..%5cother',
    '/secrets/api/%252e%252e%252fother',
    '/secrets/api/a/../../other',
    '/secrets/api/..;/..;/other',
    '/secrets/api/..;x=1/other',
    'http://127.0.0.1:3128/secrets/api/..%2f..%2fother',
  ];
  it.each(climbs)('refuses %s with a 400 and sends nothing upstream', async (target) => {
    hits.length = 0;
    const result = await send(target, '127.0.0.1:3128');
    expect(result.status).toBe(400);
    expect(result.body).toContain('refused SANDBOX_SECRETS.api: the path is refused');
    expect(hits).toEqual([]);
  });

  it('reports a refusal once per host AND port', async () => {
    blocks.length = 0;
    expect((await send('http://pinned.example:8081/', 'pinned.example:8081')).status).toBe(403);
    expect((await send('http://pinned.example:8082/', 'pinned.example:8082')).status).toBe(403);
    expect((await send('http://pinned.example:8082/again', 'pinned.example:8082')).status).toBe(403);
    expect(blocks).toEqual([
      { host: 'pinned.example', port: 8081, reason: 'not-allowed' },
      { host: 'pinned.example', port: 8082, reason: 'not-allowed' },
    ]);
  });
});
