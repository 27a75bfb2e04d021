import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { EgressDecision } from './egress-authorize.ts';

/** How long the proxy waits for an upstream to accept a connection (and, forwarding, to answer). */
export const CONNECT_TIMEOUT_MS = 30_000;

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

/** Where a plain HTTP request (or a secrets-route request) goes, and the address it was checked at. */
export type ForwardTarget = {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: number;
  path: string;
  decision: Extract<EgressDecision, { ok: true }>;
  headers: http.OutgoingHttpHeaders;
};

/** Sends the request to the checked address only (the lookup is pinned; TLS still verifies the name). */
export function forward(req: IncomingMessage, res: ServerResponse, target: ForwardTarget): void {
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
export function forwardHeaders(headers: IncomingHttpHeaders): http.OutgoingHttpHeaders {
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

/** A complete HTTP response as bytes, for a CONNECT client that gets no tunnel. */
export function rawResponse(status: number, message: string): string {
  const text = { 400: 'Bad Request', 403: 'Forbidden', 502: 'Bad Gateway' }[status] ?? 'Error';
  const body = `${message}\n`;
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/** A plain-text answer from the proxy itself. */
export function sendText(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
  res.end(`${message}\n`);
}
