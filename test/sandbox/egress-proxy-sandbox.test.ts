import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import type { EventOf } from '../../src/core/events.ts';
import type { Sandbox } from '../../sandbox/index.ts';
import { listenOnLoopback } from '../fakes/loopback.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';

// Everything here talks to loopback only: names that are refused are refused before any DNS, and
// the one name that is resolved (localhost) resolves from /etc/hosts.
const SECRET_VALUE = 'registry-token-Zq8v1XbT4m';

describe("SANDBOX_NETWORK=proxy (the default), through Patchbay's own composition", () => {
  let app: PatchbayFixture;
  let sandbox: Sandbox;
  let sessionId: string;
  let allowed: { port: number; close(): Promise<void> };
  let allowedRequests = 0;
  let other: TcpServer;
  let otherPort: number;
  let otherConnections = 0;
  let registry: { port: number; close(): Promise<void> };
  const registryRequests: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
  const registryRefusals: string[] = [];

  beforeAll(async () => {
    allowed = await listenOnLoopback(
      createHttpServer((req, res) => {
        allowedRequests++;
        res.end(`allowed-ok ${req.url}\n`);
      }),
    );
    other = createTcpServer((socket) => {
      otherConnections++;
      socket.end('other-service\n');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherPort = (other.address() as { port: number }).port;
    // A private registry that, like a real one, refuses requests without its bearer token.
    registry = await listenOnLoopback(
      createHttpServer((req, res) => {
        if (req.headers.authorization !== `Bearer ${SECRET_VALUE}`) {
          registryRefusals.push(`${req.url} without the token`);
          res.writeHead(401).end('unauthorized\n');
          return;
        }
        registryRequests.push({ url: req.url ?? '', headers: req.headers });
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ name: 'left-pad', versions: ['1.3.0'] }));
      }),
    );

    // A process that takes runs has the sandboxes; its worker never sees this session, which is
    // written to the store without a queued run, so the test holds the session's sandbox alone.
    app = await startTestPatchbay({
      serve: true,
      work: true,
      model: createScriptedProvider({ scenario: [{ text: 'Nothing to do.' }] }),
      env: {
        SANDBOX_EGRESS_ALLOW: `127.0.0.1:${allowed.port},localhost:${otherPort}`,
        SANDBOX_SECRETS: JSON.stringify({
          registry: {
            url: `http://127.0.0.1:${registry.port}/npm/`,
            header: 'Authorization',
            env: 'TEST_REGISTRY_TOKEN',
            prefix: 'Bearer ',
          },
          // The same registry, bound by the operator to publish (PUT) under /npm/left-pad only.
          publishing: {
            url: `http://127.0.0.1:${registry.port}/npm/`,
            header: 'Authorization',
            env: 'TEST_REGISTRY_TOKEN',
            prefix: 'Bearer ',
            methods: ['GET', 'HEAD', 'PUT'],
            paths: ['/left-pad'],
          },
        }),
        TEST_REGISTRY_TOKEN: SECRET_VALUE,
      },
    });
    expect(app.config.sandbox.network).toBe('proxy');
    sessionId = randomUUID();
    const actor = { source: 'web' as const, id: 'tester', name: 'Tester' };
    await app.store.create({
      id: sessionId,
      repo: 'https://github.com/acme/shop',
      prompt: 'install the dependencies',
      title: 'install the dependencies',
      requester: actor,
      thread: { source: 'web' },
    });
    sandbox = await app.sandboxes!.acquire(sessionId, { network: app.config.sandbox.network });
  }, 120_000);

  afterAll(async () => {
    await sandbox?.release();
    await app?.dispose();
    await allowed?.close();
    await registry?.close();
    await new Promise<void>((resolve) => (other ? other.close(() => resolve()) : resolve()));
  });

  const ports = () => ({
    patchbay: Number(new URL(app.url!).port),
    database: Number(new URL(app.database.url).port),
    other: otherPort,
  });

  /** Direct TCP from inside: nothing on the host's loopback is there. */
  const direct = (port: number) =>
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected'; echo "direct-rc=$?"`;
  /** Through the proxy: plain HTTP forwarding, then a CONNECT tunnel. */
  const viaProxy = (host: string, port: number) =>
    `curl -sS -o /dev/null -w 'plain=%{http_code}\\n' --max-time 20 http://${host}:${port}/; ` +
    `curl -sS -o /dev/null -w 'tunnel=%{http_connect}\\n' --max-time 20 --proxytunnel http://${host}:${port}/; echo "tunnel-rc=$?"`;

  it('sees the proxy in its environment and nothing else of the host', async () => {
    const result = await sandbox.exec('env | sort');
    expect(result.stdout).toContain('HTTP_PROXY=http://127.0.0.1:3128');
    expect(result.stdout).toContain('https_proxy=http://127.0.0.1:3128');
    expect(result.stdout).toMatch(/^NO_PROXY=$/m);
    expect(result.stdout).toContain('PATCHBAY_SECRET_REGISTRY_URL=http://127.0.0.1:3128/secrets/registry/');
    // The relay is not the command's child: a bare `wait` returns once the command's own jobs end.
    const waited = await sandbox.exec('sleep 0.2 & wait; echo waited', { timeoutMs: 20_000 });
    expect(waited.timedOut).toBe(false);
    expect(waited.stdout).toBe('waited\n');
    // The relay's set-up shares the command's first line: errors name the lines the command has.
    const missing = await sandbox.exec('true\nno_such_command_zz');
    expect(missing.stderr).toMatch(/: 2: no_such_command_zz: not found/);
  });

  it("cannot reach Patchbay's port, the database's port or another loopback service, directly or through the proxy", async () => {
    for (const [name, port] of Object.entries(ports())) {
      const result = await sandbox.exec(`${direct(port)}; ${viaProxy('127.0.0.1', port)}`, { timeoutMs: 60_000 });
      expect(result.stdout, name).not.toContain('connected');
      expect(result.stdout, name).toMatch(/direct-rc=[1-9]/);
      expect(result.stdout, name).toContain('plain=403');
      expect(result.stdout, name).toContain('tunnel=403');
      expect(result.stdout, name).toMatch(/tunnel-rc=[1-9]/);
    }
    // A name the allowlist names, resolving (on the host) to loopback, is refused by its address.
    const named = await sandbox.exec(viaProxy('localhost', otherPort), { timeoutMs: 60_000 });
    expect(named.stdout).toContain('plain=403');
    expect(named.stdout).toContain('tunnel=403');
    expect(otherConnections).toBe(0);
  });

  it('reaches a loopback host allowed by exact address and port through the proxy only', async () => {
    const port = allowed.port;
    const result = await sandbox.exec(
      `curl -sS --max-time 20 http://127.0.0.1:${port}/through; ` +
        `curl -sS --max-time 20 --proxytunnel http://127.0.0.1:${port}/tunnel; ` +
        `curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${port}/direct; echo "direct-rc=$?"`,
      { timeoutMs: 60_000 },
    );
    expect(result.stdout).toContain('allowed-ok /through');
    expect(result.stdout).toContain('allowed-ok /tunnel');
    expect(result.stdout).not.toContain('allowed-ok /direct');
    expect(result.stdout).toMatch(/direct-rc=[1-9]/);
    expect(allowedRequests).toBe(2);
  });

  it('records each refused host and port once as an egress-blocked event, with the reason', async () => {
    const result = await sandbox.exec(
      'for i in 1 2; do curl -s -o /dev/null -w "%{http_code} " http://blocked.example/pkg; curl -s -o /dev/null https://evil.example/; done; echo',
      { timeoutMs: 60_000 },
    );
    expect(result.stdout.trim()).toBe('403 403');
    const blocked = await waitFor(async () => {
      const events = (await app.store.events(sessionId, { types: ['egress-blocked'] })).map(
        (e) => e.event as EventOf<'egress-blocked'>,
      );
      return events.length >= 6 && events;
    }, 'egress-blocked events');
    // 127.0.0.1 is refused by the allowlist first (its ports are not on it), once per port the test
    // above tried; localhost is on it but resolves to loopback, which the address check refuses.
    expect(
      blocked
        .map(({ host, port, reason }) => ({ host, port, reason }))
        .sort((a, b) => a.host.localeCompare(b.host) || a.port - b.port),
    ).toEqual([
      ...[ports().patchbay, ports().database, ports().other]
        .sort((a, b) => a - b)
        .map((port) => ({ host: '127.0.0.1', port, reason: 'not-allowed' })),
      { host: 'blocked.example', port: 80, reason: 'not-allowed' },
      { host: 'evil.example', port: 443, reason: 'not-allowed' },
      { host: 'localhost', port: otherPort, reason: 'loopback' },
    ]);
  });

  it('brokers a secret: the proxy adds the header upstream, the sandbox never sees the value', async () => {
    // The value to look for comes in on stdin, so it is in no command line the sandbox can read
    // (and the markers are split by quotes, so the listed command lines do not match them).
    const result = await sandbox.exec(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell variable inside the sandbox.
      'cat > /tmp/needle; curl -sS --max-time 20 "${PATCHBAY_SECRET_REGISTRY_URL}left-pad?write=false"; echo; ' +
        "env; cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n'; " +
        "grep -rlsF -D skip --exclude=needle -f /tmp/needle /run /tmp /workspace /etc | sed 's/^/found''-in: /'; " +
        "echo control > /tmp/control-file; printf 'control\\n' > /tmp/control-needle; grep -rlsF -D skip -f /tmp/control-needle /tmp | sed 's/^/control''-in: /'",
      { timeoutMs: 120_000, stdin: `${SECRET_VALUE}\n` },
    );
    expect(result.stdout).toContain('"left-pad"');
    expect(result.stdout).toContain('control-in: /tmp/control-file');
    expect(result.stdout).not.toContain('found-in:');
    expect(result.stdout + result.stderr).not.toContain(SECRET_VALUE.slice(0, 12));
    expect(registryRequests).toHaveLength(1);
    expect(registryRequests[0]!.url).toBe('/npm/left-pad?write=false');
    expect(registryRequests[0]!.headers.host).toBe(`127.0.0.1:${registry.port}`);
    expect(registryRefusals).toEqual([]);
  }, 120_000);

  it('sends a secret only with the methods and paths it is bound to; a write only from a command approved as publishing (issue 36)', async () => {
    const before = registryRequests.length;
    const put = (variable: string, path: string) =>
      `curl -sS --max-time 20 -o /dev/null -w '%{http_code}\\n' -X PUT --data '{}' "\${${variable}}${path}"`;
    const script = [
      put('PATCHBAY_SECRET_REGISTRY_URL', 'left-pad'),
      put('PATCHBAY_SECRET_PUBLISHING_URL', 'left-pad'),
      put('PATCHBAY_SECRET_PUBLISHING_URL', 'left-pad/..;/other'),
    ].join('; ');
    const plain = await sandbox.exec(script, { timeoutMs: 120_000 });
    // Read-only by default (405); bound to PUT but not approved (403); outside its path (403).
    expect(plain.stdout.trim().split('\n')).toEqual(['405', '403', '403']);
    expect(registryRequests).toHaveLength(before);
    const approved = await sandbox.exec(script, { timeoutMs: 120_000, secretWrites: true });
    expect(approved.stdout.trim().split('\n')).toEqual(['405', '200', '403']);
    expect(registryRequests.slice(before).map((r) => r.url)).toEqual(['/npm/left-pad']);
    expect(registryRefusals).toEqual([]);
  }, 120_000);
});
