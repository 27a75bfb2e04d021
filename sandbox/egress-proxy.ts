import { unlink } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import {
  authorize,
  defaultResolve,
  type EgressBlock,
  type EgressDecision,
  type EgressGate,
  type Resolve,
} from './egress-authorize.ts';
import { CONNECT_TIMEOUT_MS, forward, forwardHeaders, rawResponse, sendText } from './egress-forward.ts';
import { normalizeHost, type EgressPolicy, type EgressRule } from './egress-policy.ts';
import { canonicalIp } from './ip-address.ts';
import { secretRequestRefusal } from './secret-binding.ts';

export type { EgressBlock, Resolve } from './egress-authorize.ts';

/**
 * SANDBOX_SECRETS, resolved: requests to `/secrets/<name>/…` go to `url` with `header: value` added,
 * only with the methods and under the path prefixes (relative to `url`'s path) the secret is bound
 * to: GET and HEAD under `/` unless the operator binds more. A method that writes is forwarded
 * only while a command a person approved as publishing runs (EgressProxy.grantWrites).
 */
export type SecretRoute = {
  name: string;
  url: string;
  header: string;
  value: string;
  methods?: readonly string[] | undefined;
  paths?: readonly string[] | undefined;
};

export type EgressProxyOptions = {
  policy: EgressPolicy;
  secrets?: readonly SecretRoute[];
  /** Where the sandbox reaches this proxy (its relay), so absolute-form requests to it are served locally. */
  selfAuthority: { host: string; port: number };
  /** Called once per refused host and port (per proxy instance); must not throw. */
  onBlocked: (block: EgressBlock) => void;
  log: Logger;
  resolve?: Resolve;
  /** The hosts people allowed for this proxy's session (see EgressGate.allowed). */
  allowed?: () => Promise<readonly EgressRule[]>;
  /**
   * The host's relay for engines' model traffic: `/engine-relay/…` is forwarded there as it came
   * (any method; the relay checks the run's token and adds the credential itself).
   */
  engineRelay?: { url: string };
};

export type EgressProxy = {
  close(): Promise<void>;
  /**
   * Lets secrets bound to a writing method use it until the returned release is called: the
   * sandbox calls it around a command a person approved as publishing (or an always-allow rule let run).
   */
  grantWrites(): () => void;
};

/** What every handler of one proxy shares: its options, how it decides, its open sockets (closed with it), and the write grants open now. */
type ProxyContext = { options: EgressProxyOptions; gate: EgressGate; sockets: Set<Duplex>; writeGrants: number };

/**
 * The host side of the sandbox's only way out: an HTTP proxy on a unix socket (bound into the
 * sandbox, where a relay exposes it on the sandbox's own loopback). CONNECT opens a TLS tunnel,
 * absolute-form requests are forwarded as plain HTTP, and `/secrets/<name>/…` reaches a configured
 * upstream with its credential header added on this side. Names are resolved here and the proxy
 * connects to the address it checked, so DNS cannot rebind a name to an internal address.
 */
export async function startEgressProxy(socketPath: string, options: EgressProxyOptions): Promise<EgressProxy> {
  const { log } = options;
  const gate: EgressGate = {
    resolve: options.resolve ?? defaultResolve,
    reported: new Set<string>(),
    log,
    onBlocked: options.onBlocked,
    ...(options.allowed && { allowed: options.allowed }),
  };
  const ctx: ProxyContext = { options, gate, sockets: new Set<Duplex>(), writeGrants: 0 };
  const server = http.createServer();
  server.on('connection', (socket: Socket) => {
    ctx.sockets.add(socket);
    socket.on('close', () => ctx.sockets.delete(socket));
  });
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    client.on('error', () => {});
    void tunnel(ctx, req, client, head);
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    void handleRequest(ctx, req, res).catch((error: unknown) => {
      log.warn({ err: error }, 'egress proxy request failed');
      if (!res.headersSent) sendText(res, 502, 'Patchbay egress proxy: the request failed');
      else res.destroy();
    });
  });
  await listen(server, socketPath);
  return {
    async close() {
      const closed = new Promise<void>((done) => server.close(() => done()));
      for (const socket of ctx.sockets) socket.destroy();
      await closed;
      await unlink(socketPath).catch(() => {});
    },
    grantWrites() {
      ctx.writeGrants += 1;
      let released = false;
      return () => {
        if (!released) ctx.writeGrants -= 1;
        released = true;
      };
    },
  };
}

/** Listens on the unix socket, replacing a stale one left at that path. */
async function listen(server: http.Server, socketPath: string): Promise<void> {
  await unlink(socketPath).catch(() => {});
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
}

/** CONNECT: a TCP tunnel to the checked address, or the refusal as a raw HTTP response. */
async function tunnel(ctx: ProxyContext, req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
  const target = parseAuthority(req.url ?? '');
  const decision: EgressDecision = target
    ? await authorize(ctx.gate, target.host, target.port, ctx.options.policy)
    : { ok: false, status: 400, message: 'CONNECT needs host:port' };
  if (!decision.ok) {
    client.end(rawResponse(decision.status, decision.message));
    return;
  }
  const upstream = net.connect({ host: decision.address, port: decision.port, family: decision.family });
  ctx.sockets.add(upstream);
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
    ctx.sockets.delete(upstream);
    client.end();
  });
  client.on('close', () => upstream.destroy());
}

/** A plain HTTP request: to the proxy itself (the secrets route), or forwarded to a checked host. */
async function handleRequest(ctx: ProxyContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { selfAuthority } = ctx.options;
  const raw = req.url ?? '/';
  let url: URL;
  try {
    url = raw.startsWith('/') ? new URL(raw, `http://${selfAuthority.host}:${selfAuthority.port}`) : new URL(raw);
  } catch {
    sendText(res, 400, 'Patchbay egress proxy: not a URL');
    return;
  }
  if (url.protocol !== 'http:') {
    sendText(res, 400, 'Patchbay egress proxy forwards plain http:// requests; https goes through CONNECT');
    return;
  }
  const port = Number(url.port || 80);
  if (raw.startsWith('/') || isSelf(selfAuthority, url.hostname, port)) {
    const path = rawPath(raw);
    if (ctx.options.engineRelay && path.startsWith(ENGINE_RELAY_PREFIX))
      await serveEngineRelay(
        ctx,
        ctx.options.engineRelay.url,
        `${path.slice(ENGINE_RELAY_PREFIX.length - 1)}${url.search}`,
        req,
        res,
      );
    else await serveSecretRoute(ctx, url, path, req, res);
    return;
  }
  const decision = await authorize(ctx.gate, url.hostname, port, ctx.options.policy);
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

/** `/secrets/<name>/…`: the configured upstream, its credential header added here, never by the sandbox. */
async function serveSecretRoute(
  ctx: ProxyContext,
  url: URL,
  raw: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  // The raw path, never the URL parser's resolution of it: `/secrets/npm/../x` must not become `/x`.
  const match = /^\/secrets\/([A-Za-z0-9_-]+)([/\\].*)?$/.exec(raw);
  const route = match && ctx.options.secrets?.find((secret) => secret.name === match[1]);
  if (!match || !route) {
    sendText(
      res,
      404,
      'Patchbay egress proxy: use this address as HTTP_PROXY/HTTPS_PROXY; /secrets/<name>/ serves the configured SANDBOX_SECRETS',
    );
    return;
  }
  const refusal = secretRequestRefusal(route, req.method ?? 'GET', match[2] ?? '/', ctx.writeGrants > 0);
  if (!refusal.ok) {
    sendText(res, refusal.status, `Patchbay egress proxy refused SANDBOX_SECRETS.${route.name}: ${refusal.reason}`);
    return;
  }
  const upstream = new URL(route.url);
  const port = Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80));
  const policy = withUpstream(ctx.options.policy, upstream.hostname, port);
  const decision = await authorize(ctx.gate, upstream.hostname, port, policy);
  if (!decision.ok) {
    sendText(res, decision.status, decision.message);
    return;
  }
  const path = `${upstream.pathname.replace(/\/$/, '')}${refusal.path}${url.search}`;
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

/** Where the engine relay is reached on the proxy's own address. */
const ENGINE_RELAY_PREFIX = '/engine-relay/';

/** `/engine-relay/…`: forwarded to the host's engine relay, which alone decides what goes further. */
async function serveEngineRelay(
  ctx: ProxyContext,
  relayUrl: string,
  path: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const upstream = new URL(relayUrl);
  const port = Number(upstream.port || 80);
  const decision = await authorize(
    ctx.gate,
    upstream.hostname,
    port,
    withUpstream(ctx.options.policy, upstream.hostname, port),
  );
  if (!decision.ok) {
    sendText(res, decision.status, decision.message);
    return;
  }
  const headers = forwardHeaders(req.headers);
  headers.host = upstream.host;
  forward(req, res, { protocol: 'http:', hostname: upstream.hostname, port, path, decision, headers });
}

/** Whether an absolute-form request names the proxy's own address (the relay's), so it is served here. */
function isSelf(self: EgressProxyOptions['selfAuthority'], hostname: string, port: number): boolean {
  const host = normalizeHost(hostname);
  return port === self.port && (host === self.host || host === 'localhost');
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

function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  return match ? { host: match[1]!, port: Number(match[2]) } : undefined;
}
