import { createServer } from 'node:http';
import { request } from 'node:http';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEgressAllow } from '../../sandbox/egress-policy.ts';
import { startEgressProxy, type EgressBlock, type EgressProxy } from '../../sandbox/egress-proxy.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';
import { makeTempDir } from './sandbox-test-helpers.ts';

// The proxy on its unix socket, with host DNS replaced by a table: names resolve only here, and
// the only addresses ever connected to are on loopback.
describe('egress proxy: names are resolved once, on the host, and the checked address is the one used', () => {
  let dir: string;
  let proxy: EgressProxy;
  let upstream: { port: number; close(): Promise<void> };
  const hits: string[] = [];
  const lookups: string[] = [];
  const blocks: EgressBlock[] = [];
  let dns: Record<string, string[]>;

  beforeAll(async () => {
    dir = await makeTempDir('egress-proxy');
    upstream = await listenOnLoopback(
      createServer((req, res) => {
        hits.push(`${req.headers.host} ${req.url}`);
        res.end('upstream-ok');
      }),
    );
    dns = {
      'pinned.example': ['127.0.0.1'],
      'metadata.example': ['169.254.169.254'],
      'internal.example': ['10.0.0.5', 'fd00::5'],
    };
    proxy = await startEgressProxy(path.join(dir, 'p.sock'), {
      policy: {
        rules: parseEgressAllow(
          `pinned.example:${upstream.port},metadata.example,internal.example,127.0.0.1:${upstream.port}`,
        ),
        protectedEndpoints: [],
      },
      selfAuthority: { host: '127.0.0.1', port: 3128 },
      onBlocked: (block) => blocks.push(block),
      log: pino({ level: 'silent' }),
      resolve: async (host) => {
        lookups.push(host);
        const addresses = dns[host];
        if (!addresses) throw new Error(`ENOTFOUND ${host}`);
        return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
      },
    });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
    await rm(dir, { recursive: true, force: true });
  });

  const get = (url: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { socketPath: path.join(dir, 'p.sock'), path: url, headers: { host: new URL(url).host } },
        (res) => {
          let body = '';
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });

  it('connects to the address it resolved and checked, with the Host the client asked for', async () => {
    const result = await get(`http://pinned.example:${upstream.port}/a`);
    expect(result).toEqual({ status: 200, body: 'upstream-ok' });
    expect(hits).toEqual([`pinned.example:${upstream.port} /a`]);
    expect(lookups).toEqual(['pinned.example']);
  });

  it('refuses an allowed name whose addresses are link-local (metadata) or private, before connecting', async () => {
    const metadata = await get('http://metadata.example/latest/meta-data/');
    expect(metadata.status).toBe(403);
    expect(metadata.body).toContain('link-local');
    const internal = await get('http://internal.example/');
    expect(internal.status).toBe(403);
    expect(blocks).toEqual([
      { host: 'metadata.example', port: 80, reason: 'link-local' },
      { host: 'internal.example', port: 80, reason: 'private' },
    ]);
    expect(hits).toHaveLength(1);
  });

  it('refuses names off the allowlist without resolving them', async () => {
    const before = lookups.length;
    expect((await get('http://elsewhere.example/')).status).toBe(403);
    expect(lookups).toHaveLength(before);
    expect(blocks.at(-1)).toEqual({ host: 'elsewhere.example', port: 80, reason: 'not-allowed' });
  });
});
