import { lookup } from 'node:dns/promises';
import { unlink } from 'node:fs/promises';
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type LookupFunction, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import {
  checkEgressAddress,
  checkEgressTarget,
  describeEgressRefusal,
  normalizeHost,
  type EgressPolicy,
  type EgressRefusal,
  type EgressRule,
} from './egress-policy.ts';
import { canonicalIp } from './ip-address.ts';

/** A connection the proxy refused: what the sandbox asked for and why. */
export type EgressBlock = { host: string; port: number; reason: EgressRefusal };

/** SANDBOX_SECRETS, resolved: requests to `/secrets/<name>/…` go to `url` with `header: value` added. */
export type SecretRoute = { name: string; url: string; header: string; value: string };

/** Host-side name resolution; every address it returns is checked before the proxy connects to it. */
export type Resolve = (host: string) => Promise<Array<{ address: string; family: number }>>;

export type EgressProxyOptions = {
  policy: EgressPolicy;
  secrets?: readonly SecretRoute[];
  /** Where the sandbox reaches this proxy (its relay), so absolute-form requests to it are served locally. */
  selfAuthority: { host: string; port: number };
  /** Called once per refused host and port (per proxy instance); must not throw. */
  onBlocked: (block: EgressBlock) => void;
  log: Logger;
  resolve?: Resolve;
};

export type EgressProxy = { close(): Promise<void> };

const CONNECT_TIMEOUT_MS = 30_000;
const HOP_BY_HOP = [
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];

type Decision =
  | { ok: true; host: string; port: number; address: string; family: number }
  | { ok: false; status: 400 | 403 | 502; message: string };

const defaultResolve: Resolve = (host) => lookup(host, { all: true, verbatim: true });

/**
 * The host side of the sandbox's only way out: an HTTP proxy on a unix socket (bound into the
 * sandbox, where a relay exposes it on the sandbox's own loopback). CONNECT opens a TLS tunnel,
 * absolute-form requests are forwarded as plain HTTP, and `/secrets/<name>/…` reaches a configured
 * upstream with its credential header added on this side. Names are resolved here and the proxy
 * connects to the address it checked, so DNS cannot rebind a name to an internal address.
 */
export async function startEgressProxy(socketPath: string, options: EgressProxyOptions): Promise<EgressProxy> {
  const { log } = options;
  const resolve = options.resolve ?? defaultResolve;
  const reported = new Set<string>();
  const sockets = new Set<Duplex>();

  const refuse = (host: string, port: number, reason: EgressRefusal): Decision => {
    // Per host AND port: an allowed host refused on another port is a different thing to allow.
    const key = `${host}:${port}`;
    if (!reported.has(key)) {
      reported.add(key);
      log.info({ host, port, reason }, 'egress refused');
      options.onBlocked({ host, port, reason });
    }
    const message = `Patchbay egress proxy refused ${host}:${port}: ${describeEgressRefusal(reason)}. Ask the person who runs Patchbay to allow it (SANDBOX_EGRESS_ALLOW).`;
    return { ok: false, status: 403, message };
  };

  /** The whole policy for one request: allowlist, then DNS on the host, then every address checked. */
  async function authorize(rawHost: string, port: number, policy: EgressPolicy): Promise<Decision> {
    const host = normalizeHost(rawHost);
    if (!host || !Number.isInteger(port) || port < 1 || port > 65535)
      return { ok: false, status: 400, message: `not a host and port: ${rawHost}:${port}` };
    const refusal = checkEgressTarget(policy, host, port);
    if (refusal) return refuse(host, port, refusal);
    const literal = canonicalIp(host);
    let candidates: Array<{ address: string; family: number }>;
    if (literal) {
      candidates = [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
    } else {
      try {
        candidates = await resolve(host);
      } catch (error) {
        return {
          ok: false,
          status: 502,
          message: `Patchbay egress proxy could not resolve ${host}: ${(error as Error).message}`,
        };
      }
    }
    let first: EgressRefusal | undefined;
    for (const candidate of candidates) {
      const addressRefusal = checkEgressAddress(policy, candidate.address, port);
      if (!addressRefusal) return { ok: true, host, port, address: candidate.address, family: candidate.family };
      first ??= addressRefusal;
    }
    return first
      ? refuse(host, port, first)
      : { ok: false, status: 502, message: `Patchbay egress proxy: ${host} has no address` };
  }

  const server = http.createServer();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    client.on('error', () => {});
    void (async () => {
      const target = parseAuthority(req.url ?? '');
      const decision = target
        ? await authorize(target.host, target.port, options.policy)
        : ({ ok: false, status: 400, message: 'CONNECT needs host:port' } as const);
      if (!decision.ok) {
        client.end(rawResponse(decision.status, decision.message));
        return;
      }
      const upstream = net.connect({ host: decision.address, port: decision.port, family: decision.family });
      sockets.add(upstream);
      upstream.setTimeout(CONNECT_TIMEOUT_MS, () => upstream.destroy(new Error('connect timed out')));
      let connected = false;
      upstream.once('connect', () => {
        connected = true;
        upstream.setTimeout(0);
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', (error) => {
        if (!connected)
          client.end(
            rawResponse(
              502,
              `Patchbay egress proxy could not connect to ${decision.host}:${decision.port}: ${error.message}`,
            ),
          );
        else client.destroy();
      });
      upstream.on('close', () => {
        sockets.delete(upstream);
        client.end();
      });
      client.on('close', () => upstream.destroy());
    })();
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void handleRequest(req, res).catch((error: unknown) => {
      log.warn({ err: error }, 'egress proxy request failed');
      if (!res.headersSent) sendText(res, 502, 'Patchbay egress proxy: the request failed');
      else res.destroy();
    });
  });

  async function handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    let url: URL;
    try {
      url = raw.startsWith('/')
        ? new URL(raw, `http://${options.selfAuthority.host}:${options.selfAuthority.port}`)
        : new URL(raw);
    } catch {
      sendText(res, 400, 'Patchbay egress proxy: not a URL');
      return;
    }
    if (url.protocol !== 'http:') {
      sendText(res, 400, 'Patchbay egress proxy forwards plain http:// requests; https goes through CONNECT');
      return;
    }
    const port = Number(url.port || 80);
    if (raw.startsWith('/') || isSelf(url.hostname, port)) {
      await serveSecretRoute(url, rawPath(raw), req, res);
      return;
    }
    const decision = await authorize(url.hostname, port, options.policy);
    if (!decision.ok) {
      sendText(res, decision.status, decision.message);
      return;
    }
    // The upstream sees the host that was checked, never a Host header the sandbox chose (a
    // virtual host behind an allowed address is not allowed by it).
    const headers = forwardHeaders(req.headers);
    headers.host = url.host;
    forward(req, res, {
      protocol: 'http:',
      hostname: url.hostname,
      port,
      path: `${url.pathname}${url.search}`,
      decision,
      headers,
    });
  }

  async function serveSecretRoute(url: URL, raw: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const traversal = secretPathRefusal(raw);
    if (traversal) {
      sendText(res, 400, `Patchbay egress proxy refused the secrets path: ${traversal}`);
      return;
    }
    const match = /^\/secrets\/([A-Za-z0-9_-]+)(\/.*)?$/.exec(url.pathname);
    const route = match && options.secrets?.find((secret) => secret.name === match[1]);
    if (!match || !route) {
      sendText(
        res,
        404,
        'Patchbay egress proxy: use this address as HTTP_PROXY/HTTPS_PROXY; /secrets/<name>/ serves the configured SANDBOX_SECRETS',
      );
      return;
    }
    const upstream = new URL(route.url);
    const port = Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80));
    const decision = await authorize(upstream.hostname, port, withUpstream(options.policy, upstream.hostname, port));
    if (!decision.ok) {
      sendText(res, decision.status, decision.message);
      return;
    }
    const path = `${upstream.pathname.replace(/\/$/, '')}${(match[2] ?? '/').replace(/\/{2,}/g, '/')}${url.search}`;
    const headers = forwardHeaders(req.headers);
    delete headers[route.header.toLowerCase()];
    headers.host = upstream.host;
    headers[route.header.toLowerCase()] = route.value;
    forward(req, res, {
      protocol: upstream.protocol as 'http:' | 'https:',
      hostname: upstream.hostname,
      port,
      path,
      decision,
      headers,
    });
  }

  function isSelf(hostname: string, port: number): boolean {
    const host = normalizeHost(hostname);
    return port === options.selfAuthority.port && (host === options.selfAuthority.host || host === 'localhost');
  }

  await unlink(socketPath).catch(() => {});
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolveListen();
    });
  });

  return {
    async close() {
      const closed = new Promise<void>((done) => server.close(() => done()));
      for (const socket of sockets) socket.destroy();
      await closed;
      await unlink(socketPath).catch(() => {});
    },
  };
}

type ForwardTarget = {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: number;
  path: string;
  decision: Extract<Decision, { ok: true }>;
  headers: http.OutgoingHttpHeaders;
};

/** Sends the request to the checked address only (the lookup is pinned; TLS still verifies the name). */
function forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget): void {
  const { address, family } = target.decision;
  const pinned: LookupFunction = (_name, opts, callback) => {
    if (opts.all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
        { address, family },
      ]);
    else callback(null, address, family);
  };
  const client = (target.protocol === 'https:' ? https : http).request({
    hostname: target.hostname,
    port: target.port,
    method: req.method,
    path: target.path,
    headers: target.headers,
    lookup: pinned,
    agent: false,
    timeout: CONNECT_TIMEOUT_MS,
  });
  client.on('timeout', () => client.destroy(new Error('upstream timed out')));
  client.on('response', (upstream) => {
    const headers: http.OutgoingHttpHeaders = forwardHeaders(upstream.headers);
    res.writeHead(upstream.statusCode ?? 502, headers);
    upstream.pipe(res);
  });
  client.on('error', (error) => {
    if (!res.headersSent)
      sendText(res, 502, `Patchbay egress proxy could not reach ${target.hostname}:${target.port}: ${error.message}`);
    else res.destroy();
  });
  res.on('close', () => client.destroy());
  req.pipe(client);
}

/** A copy of the headers without hop-by-hop ones (and those the Connection header names). */
function forwardHeaders(headers: IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.includes(name) || named.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** The policy plus one exact rule for a SANDBOX_SECRETS upstream the operator named. */
function withUpstream(policy: EgressPolicy, hostname: string, port: number): EgressPolicy {
  const host = normalizeHost(hostname) ?? hostname;
  const address = canonicalIp(host);
  const rule: EgressRule = address
    ? { kind: 'address', address, port }
    : { kind: 'domain', domain: host, wildcard: false, port };
  return { ...policy, rules: [...policy.rules, rule] };
}

/** The path of a request target, as the client sent it (origin form, or absolute form without scheme and authority). */
function rawPath(raw: string): string {
  const path = raw.startsWith('/') ? raw : raw.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '');
  return path.split(/[?#]/, 1)[0] || '/';
}

/**
 * Why a secrets-route path must not be forwarded with its credential, if so. URL parsing already
 * resolves literal and `%2e` dot segments; what it keeps (`..%2f`, `%5c`, double encoding) an upstream
 * may decode into a climb out of the route's base path, so anything encoded that could become a
 * separator or a dot segment is refused outright rather than guessed at.
 */
export function secretPathRefusal(raw: string): string | undefined {
  if (raw.includes('\\')) return 'backslashes are not allowed';
  if (/%(?:2e|2f|5c|25|00)/i.test(raw))
    return 'encoded dots, slashes, backslashes, percent signs or NUL are not allowed';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(raw)) return 'control characters are not allowed';
  const segments = raw.split('/');
  if (segments.some((segment) => segment === '.' || segment === '..')) return 'dot segments are not allowed';
  return undefined;
}

function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  return match ? { host: match[1]!, port: Number(match[2]) } : undefined;
}

function rawResponse(status: number, message: string): string {
  const text = { 400: 'Bad Request', 403: 'Forbidden', 502: 'Bad Gateway' }[status] ?? 'Error';
  const body = `${message}\n`;
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

function sendText(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
  res.end(`${message}\n`);
}
