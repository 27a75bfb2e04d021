import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { countLimitReached, type RunOutcome } from '../agent/agent-runner.ts';
import type { RunLog } from '../core/run-log.ts';
import { eventCostUsd } from '../models/model-catalog.ts';
import { describeError, isPatchbayError } from '../core/errors.ts';
import type { UpstreamSignIn } from './chatgpt-signin.ts';
import type { RelayApi } from './engine.ts';
import { pathRefusal } from './relay-allowlist.ts';
import type { EngineRelay, RelayLease, RelayRequest } from './relay-lease.ts';
import { GATE_PATH, serveGate } from './relay-gate.ts';
import { type MeteredCall, meterAnswer } from './relay-metering.ts';

/**
 * Where the relay forwards one wire format: the configured provider's base URL (the same setting the
 * model providers use, so tests point it at a loopback fake), its model, and the credential headers
 * added on the host (x-api-key, or a subscription's Authorization header).
 */
export type RelayUpstream = {
  baseUrl: string;
  model: string;
  headers: Record<string, string>;
  /** A sign-in whose headers are asked for on every call and renewed when the upstream answers 401 (ChatGPT for Codex). */
  signIn?: UpstreamSignIn;
  /** The upstream's paths carry no `/v1` (the ChatGPT backend's `/backend-api/codex/responses`). */
  unversioned?: boolean;
};

export type EngineRelayOptions = {
  upstreams: Partial<Record<RelayApi, RelayUpstream>>;
  /** Where each call's usage is written (the session store): usage events and the session's counters. */
  runLog: Pick<RunLog, 'commitStep'>;
  log: Logger;
  /**
   * The relay's base URL as a sandbox reaches it, from the relay's own loopback URL: through the
   * egress proxy (`http://127.0.0.1:3128/engine-relay`), directly, or at PUBLIC_URL (Modal); or why
   * sandboxes cannot reach it.
   */
  sandboxUrl: (relayUrl: string) => string | { unreachable: string };
  fetch?: typeof fetch;
};

/**
 * A running relay: lease runs on it, and close it at shutdown. `handle` serves one request that
 * reached it another way than its loopback port (Patchbay's HTTP server, for Modal sandboxes);
 * `path` is the request's path and query below the relay's base URL.
 */
export type RunningEngineRelay = EngineRelay & {
  url: string;
  handle(req: IncomingMessage, res: ServerResponse, path: string): void;
  close(): Promise<void>;
};

/** What the relay keeps of one open lease. */
type LeaseState = {
  id: string;
  request: RelayRequest;
  upstream: RelayUpstream;
  calls: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  toolCalls: number;
  /** Why the relay stopped forwarding for this run (budget spent, a count limit reached, a sign-in that cannot be used), as its outcome. */
  stop?: Extract<RunOutcome, { kind: 'failed' }> | undefined;
  closed: boolean;
};

type RelayContext = { options: EngineRelayOptions; leases: Map<string, LeaseState>; fetch: typeof fetch };

/** Request headers never forwarded: the run's token, hop-by-hop headers, and what fetch sets itself. */
const DROPPED_HEADERS = new Set([
  'host',
  'x-api-key',
  'authorization',
  'connection',
  'content-length',
  'accept-encoding',
  'proxy-connection',
  'keep-alive',
  'transfer-encoding',
]);

/**
 * Starts the host's relay for engines' model traffic on loopback. An engine in a sandbox presents
 * its run's token; the relay checks the run is open, within its budget and not stopped, swaps the
 * token for the real credential, forwards to the configured provider, meters the answer's usage
 * into the session's log, and stops forwarding once the run's budget is spent.
 */
export async function startEngineRelay(options: EngineRelayOptions): Promise<RunningEngineRelay> {
  const ctx: RelayContext = { options, leases: new Map(), fetch: options.fetch ?? fetch };
  const handle = (req: IncomingMessage, res: ServerResponse, path: string) => {
    void handleRelayRequest(ctx, req, res, path).catch((error: unknown) => {
      options.log.error({ err: error }, 'engine relay request failed');
      if (!res.headersSent) sendRelayError(res, 502, 'api_error', 'Patchbay relay: the provider could not be reached');
      else res.destroy();
    });
  };
  const server = createServer((req, res) => handle(req, res, req.url ?? '/'));
  const url = await listenLoopback(server);
  return {
    url,
    handle,
    open: (request) => openLease(ctx, url, request),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function listenLoopback(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A lease for one run: a fresh token, revoked when the run closes it or its signal aborts. */
function openLease(ctx: RelayContext, relayUrl: string, request: RelayRequest): RelayLease {
  const upstream = ctx.options.upstreams[request.api];
  const baseUrl = ctx.options.sandboxUrl(relayUrl);
  if (!upstream) throw new Error(`no ${request.api} provider is configured for the engine relay`);
  if (typeof baseUrl !== 'string') throw new Error(baseUrl.unreachable);
  const token = `pbrelay-${randomBytes(24).toString('base64url')}`;
  const state: LeaseState = {
    id: randomBytes(6).toString('hex'),
    request,
    upstream,
    calls: 0,
    costUsd: 0,
    inputTokens: 0,
    outputTokens: 0,
    toolCalls: 0,
    closed: false,
  };
  ctx.leases.set(token, state);
  return {
    access: { baseUrl, token, model: upstream.model, env: {} },
    stopped: () => state.stop,
    spent: () => ({
      costUsd: state.costUsd,
      inputTokens: state.inputTokens,
      outputTokens: state.outputTokens,
      calls: state.calls,
      toolCalls: state.toolCalls,
    }),
    close: () => {
      state.closed = true;
      ctx.leases.delete(token);
    },
  };
}

/**
 * The limit the run's metered calls have reached, as the outcome that ends it, as Patchbay's own
 * loop ends a run: its cost budget (the run pauses to ask), its tokens or its tool calls.
 */
function reachedLimit(state: LeaseState): Extract<RunOutcome, { kind: 'failed' }> | undefined {
  const { costUsd, request } = state;
  if (costUsd >= request.maxCostUsd)
    return {
      kind: 'failed',
      code: 'budget_exhausted',
      message: `the run spent $${costUsd.toFixed(2)} of its $${request.maxCostUsd.toFixed(2)} budget`,
      budget: { kind: 'cost', spent: costUsd, limit: request.maxCostUsd },
    };
  return countLimitReached(
    { tokens: state.inputTokens + state.outputTokens, toolCalls: state.toolCalls },
    {
      maxTokens: request.maxTokens ?? Number.POSITIVE_INFINITY,
      maxToolCalls: request.maxToolCalls ?? Number.POSITIVE_INFINITY,
    },
  );
}

/** The run's token, where the engine sends its API key: x-api-key, or Authorization: Bearer. */
function presentedToken(req: IncomingMessage): string | undefined {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string' && key) return key;
  return /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
}

/** Why this request may not be forwarded (an error in the provider's own format), or undefined. */
function refusal(
  state: LeaseState | undefined,
  method: string,
  path: string,
): { status: number; type: string; message: string } | undefined {
  if (!state || state.closed)
    return { status: 401, type: 'authentication_error', message: 'Patchbay relay: this run is not open' };
  if (state.request.signal.aborted)
    return { status: 403, type: 'permission_error', message: 'Patchbay relay: the session was stopped' };
  const outside = pathRefusal(state.request.engine, state.request.api, method, path);
  if (outside) return { status: 403, type: 'permission_error', message: outside };
  state.stop ??= reachedLimit(state);
  if (state.stop)
    return { status: 403, type: 'permission_error', message: `Patchbay relay stopped this run: ${state.stop.message}` };
  return undefined;
}

async function handleRelayRequest(
  ctx: RelayContext,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<void> {
  const token = presentedToken(req);
  const state = token ? ctx.leases.get(token) : undefined;
  const target = new URL(path, 'http://relay');
  if (target.pathname === GATE_PATH) return serveGate(state, req, res);
  const method = req.method ?? 'GET';
  const refused = refusal(state, method, target.pathname);
  if (refused || !state) {
    const r = refused ?? { status: 401, type: 'authentication_error', message: 'Patchbay relay: this run is not open' };
    ctx.options.log.warn(
      { status: r.status, method, path: target.pathname.slice(0, 200), sessionId: state?.request.sessionId },
      `engine relay refused a request: ${r.message}`,
    );
    return sendRelayError(res, r.status, r.type, r.message);
  }
  const body = await readBody(req);
  const upstreamPath = state.upstream.unversioned ? target.pathname.replace(/^\/v1/, '') : target.pathname;
  const upstreamUrl = `${state.upstream.baseUrl.replace(/\/$/, '')}${upstreamPath}${target.search}`;
  const send = (credential: Record<string, string>) =>
    ctx.fetch(upstreamUrl, {
      method,
      headers: { ...forwardedHeaders(req), ...state.upstream.headers, ...credential },
      ...(body.length > 0 && { body: new Uint8Array(body) }),
      signal: state.request.signal,
    });
  const answer = await sendSignedIn(ctx, state, send);
  if (!answer) {
    const message = `Patchbay relay: ${state.stop?.message ?? 'no credential'}`;
    return sendRelayError(res, 401, 'authentication_error', message);
  }
  const text = await relayAnswer(answer, res);
  if (answer.ok) await meter(ctx, state, text, requestModel(body, state.upstream.model));
}

/**
 * Sends the call with the upstream's sign-in, if it has one: its current headers, and once more
 * with fresh ones when the upstream answers 401. Undefined when the sign-in cannot be used; the
 * reason is kept as the run's outcome (the run fails saying to sign in again).
 */
async function sendSignedIn(
  ctx: RelayContext,
  state: LeaseState,
  send: (credential: Record<string, string>) => Promise<Response>,
): Promise<Response | undefined> {
  const signIn = state.upstream.signIn;
  if (!signIn) return send({});
  const credential = await signInHeaders(ctx, state, () => signIn.headers(state.request.signal));
  if (!credential) return undefined;
  const answer = await send(credential);
  if (answer.status !== 401) return answer;
  await answer.body?.cancel();
  ctx.options.log.info("the upstream refused the sign-in's access token; refreshing it");
  const fresh = await signInHeaders(ctx, state, () => signIn.refused(credential, state.request.signal));
  return fresh && send(fresh);
}

/** The sign-in's headers, or undefined (the reason kept as the run's stop) when it cannot be used. */
async function signInHeaders(
  ctx: RelayContext,
  state: LeaseState,
  ask: () => Promise<Record<string, string>>,
): Promise<Record<string, string> | undefined> {
  try {
    return await ask();
  } catch (error) {
    // A stop, or a refresh that failed in passing: the engine's own retry (or the stop) decides.
    if (state.request.signal.aborted || isPatchbayError(error, 'service_unavailable')) throw error;
    state.stop = { kind: 'failed', code: 'unauthorized', message: describeError(error) };
    ctx.options.log.warn({ reason: state.stop.message }, 'the engine relay has no usable sign-in');
    return undefined;
  }
}

function forwardedHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (DROPPED_HEADERS.has(name) || value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Streams the provider's answer to the engine as it comes, and returns its whole text for metering. */
async function relayAnswer(answer: Response, res: ServerResponse): Promise<string> {
  const headers: Record<string, string> = {};
  for (const name of [
    'content-type',
    'request-id',
    'retry-after',
    'x-request-id',
    'anthropic-ratelimit-unified-status',
  ])
    if (answer.headers.get(name)) headers[name] = answer.headers.get(name)!;
  res.writeHead(answer.status, headers);
  const decoder = new TextDecoder();
  let text = '';
  if (answer.body) {
    for await (const chunk of answer.body) {
      res.write(chunk);
      text += decoder.decode(chunk, { stream: true });
    }
  }
  res.end();
  return text + decoder.decode();
}

function requestModel(body: Buffer, fallback: string): string {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { model?: unknown };
    return typeof parsed.model === 'string' ? parsed.model : fallback;
  } catch {
    return fallback;
  }
}

/** Writes one call's usage to the session's log and adds it to the run's; past a limit the relay stops. */
async function meter(ctx: RelayContext, state: LeaseState, text: string, model: string): Promise<void> {
  const metered: MeteredCall | undefined = meterAnswer(state.request.api, text, model);
  if (!metered) return;
  const turn = state.request.firstTurn + state.calls;
  state.calls++;
  const event = { type: 'usage' as const, turn, model: metered.model, ...metered.usage };
  state.costUsd += eventCostUsd(event) ?? 0;
  state.inputTokens += metered.usage.inputTokens;
  state.outputTokens += metered.usage.outputTokens;
  state.toolCalls += metered.toolCalls;
  await ctx.options.runLog.commitStep(state.request.sessionId, {
    events: [{ event, dedupeKey: `usage:relay:${state.id}:${turn}` }],
    usage: metered.usage,
  });
  state.stop ??= reachedLimit(state);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** An error in the shape both Anthropic's and OpenAI's clients read (`error.type`, `error.message`). */
function sendRelayError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
}
