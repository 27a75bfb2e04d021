import type { LinearClient } from '@linear/sdk';
import type { Logger } from 'pino';
import { PatchbayError } from '../../src/core/errors.ts';
import { linearClient, type LinearClientSource } from './linear-api.ts';
import { z } from 'zod';
import type { Installation, InstallationTokens, LinearStore } from './linear-store.ts';

/** Sealing of tokens at rest (PATCHBAY_SECRET_KEY's secret box). */
export type TokenSealer = { seal(plaintext: string): string; open(sealed: string): string };

/** Linear's token endpoint and the app's credentials, for the `refresh_token` grant. */
export type TokenEndpoint = { tokenUrl: string; clientId: string; clientSecret: string; fetch?: typeof fetch };

/** Why a workspace's token could not be refreshed; `permanent` when only a new install helps. */
export type RefreshFailure = {
  organizationId: string;
  reason: string;
  permanent: boolean;
  accessToken: string;
  refreshCiphertext: string | null;
};

/** The answer of Linear's token endpoint (RFC 6749 §5.1): the refresh token rotates on every grant. */
const TokenAnswer = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1).optional(),
  expires_in: z.coerce.number().positive().optional(),
});

/** What an install or a refresh grant answered, ready to store. */
export function tokensToStore(
  answer: unknown,
  box: TokenSealer,
  now: number,
): (InstallationTokens & { accessToken: string }) | undefined {
  const parsed = TokenAnswer.safeParse(answer);
  if (!parsed.success) return undefined;
  const { access_token, refresh_token, expires_in } = parsed.data;
  return {
    accessToken: access_token,
    ciphertext: box.seal(access_token),
    refreshCiphertext: refresh_token ? box.seal(refresh_token) : null,
    expiresAt: expires_in ? new Date(now + expires_in * 1000) : null,
  };
}

export type LinearTokens = ReturnType<typeof createLinearTokens>;

const transientBackoffMs = 30_000;

/**
 * The access tokens of workspaces installed through OAuth. Linear's access tokens expire (about a
 * day) and come with a refresh token that is spent by its use: a token due to expire is refreshed
 * before it is used (in the last quarter of its life, at most five minutes before it ends), and one
 * Linear refuses is refreshed at once. One refresh per workspace is in flight at a time, in this
 * process (callers join it) and across processes (the installation's row is locked while Linear is
 * asked, and whoever comes next finds the new token). A refresh Linear refuses for good
 * (`invalid_grant`: the app was removed or the refresh token revoked) is reported once, through
 * `onRefreshFailed`, and not asked again with the same refresh token; a passing failure (Linear
 * busy or down: 429, 5xx, no answer) is retried within the grant, then logged and retried after
 * 30 s or its Retry-After, the current token used meanwhile. Linear spends a refresh token the
 * moment it answers a grant and keeps no grace for the old one, so a grant once sent is never cut
 * short by its caller: its answer is awaited and saved in the same transaction that holds the row.
 * An answer lost anyway (the connection or the process died in between) leaves a spent token:
 * Linear then answers invalid_grant, and the workspace must install the app again (the thread and
 * the log say where).
 */
export function createLinearTokens(deps: {
  store: LinearStore;
  box: TokenSealer;
  endpoint: TokenEndpoint;
  log: Logger;
  onRefreshFailed: (failure: RefreshFailure) => Promise<void>;
  now?: () => number;
}) {
  const context: TokenContext = {
    ...deps,
    now: deps.now ?? Date.now,
    refusedRefresh: new Map(),
    retryAt: new Map(),
  };
  const { store, box } = deps;
  const inflight = new Map<string, Promise<string | undefined>>();

  /** One refresh per workspace in flight in this process: callers join the one running. */
  function refresh(organizationId: string, refusedToken: string | undefined): Promise<string | undefined> {
    const running = inflight.get(organizationId);
    if (running) return running;
    const started = refreshHoldingRow(context, organizationId, refusedToken).finally(() =>
      inflight.delete(organizationId),
    );
    inflight.set(organizationId, started);
    return started;
  }

  return {
    /** Whether the workspace was installed through OAuth (its tokens are kept here). */
    async installed(organizationId: string): Promise<boolean> {
      return (await store.installation(organizationId)) !== undefined;
    },
    /** The access token to use now (refreshed first when it is due), or undefined when not installed. */
    async current(organizationId: string, signal?: AbortSignal): Promise<string | undefined> {
      const installation = await store.installation(organizationId);
      if (!installation) return undefined;
      const stored = box.open(installation.ciphertext);
      if (!due(installation, context.now())) return stored;
      // A caller that gave up starts no refresh; one started runs to its saved answer (see grant).
      signal?.throwIfAborted();
      // A refresh that fails leaves the token there is: it may still have minutes to live.
      return (await refresh(organizationId, undefined)) ?? stored;
    },
    /** Linear refused `token`: a fresh access token, or undefined when none can be had. */
    refused(organizationId: string, token: string, signal?: AbortSignal): Promise<string | undefined> {
      signal?.throwIfAborted();
      return refresh(organizationId, token);
    },
  };
}

/** What refreshing works with, and what it remembers between refreshes (per workspace). */
type TokenContext = {
  store: LinearStore;
  box: TokenSealer;
  endpoint: TokenEndpoint;
  log: Logger;
  onRefreshFailed: (failure: RefreshFailure) => Promise<void>;
  now: () => number;
  /** Refresh tokens Linear refused for good, per workspace: asking again cannot help. */
  refusedRefresh: Map<string, string>;
  /** When a workspace whose refresh failed for a while may be asked again. */
  retryAt: Map<string, number>;
};

/** In the last quarter of its life, at most five minutes before it ends. */
function due(installation: Installation, now: number): boolean {
  if (!installation.expiresAt) return false;
  const expires = installation.expiresAt.getTime();
  const margin = Math.min(5 * 60_000, (expires - installation.updatedAt.getTime()) / 4);
  return now >= expires - margin;
}

/** Refreshes holding the installation's row, so processes sharing the database take turns; then reports a failure. */
async function refreshHoldingRow(
  context: TokenContext,
  organizationId: string,
  refusedToken: string | undefined,
): Promise<string | undefined> {
  const { log } = context;
  const { token, failure } = await context.store.withInstallationLocked(organizationId, (installation) =>
    refreshLocked(context, { organizationId, refusedToken, installation }),
  );
  if (failure?.permanent)
    await context
      .onRefreshFailed(failure)
      .catch((error: unknown) =>
        log.warn(
          { err: error, organizationId },
          'could not tell the workspace that its Linear token cannot be refreshed',
        ),
      );
  else if (failure)
    log.warn(
      { organizationId, reason: failure.reason },
      'could not refresh the Linear access token; trying again in 30 s',
    );
  return token;
}

type Refreshed = { token: string | undefined; failure?: RefreshFailure };

/** The refresh itself, under the row lock: the tokens to store, the token to use, and why it failed. */
async function refreshLocked(
  context: TokenContext,
  input: { organizationId: string; refusedToken: string | undefined; installation: Installation | undefined },
): Promise<{ save?: InstallationTokens; result: Refreshed }> {
  const { organizationId, refusedToken, installation } = input;
  const { box, now } = context;
  if (!installation) return { result: { token: undefined } };
  const stored = box.open(installation.ciphertext);
  // Someone (another flight, another process) refreshed it since the caller looked: take theirs.
  if (refusedToken !== undefined ? stored !== refusedToken : !due(installation, now()))
    return { result: { token: stored } };
  const fallback = refusedToken !== undefined ? undefined : stored;
  const refreshCiphertext = installation.refreshCiphertext;
  if (!refreshCiphertext) {
    const reason = 'no refresh token is stored for it (installed before Linear issued refresh tokens)';
    const failure = { organizationId, reason, permanent: true, accessToken: stored, refreshCiphertext: null };
    return { result: { token: fallback, failure } };
  }
  if (context.refusedRefresh.get(organizationId) === refreshCiphertext) return { result: { token: fallback } };
  if (refusedToken === undefined && now() < (context.retryAt.get(organizationId) ?? 0))
    return { result: { token: fallback } };
  const answer = await grant(context, box.open(refreshCiphertext));
  if ('failed' in answer) {
    if (answer.permanent) context.refusedRefresh.set(organizationId, refreshCiphertext);
    else context.retryAt.set(organizationId, now() + Math.max(transientBackoffMs, answer.retryAfterMs ?? 0));
    const failure = {
      organizationId,
      reason: answer.failed,
      permanent: answer.permanent,
      accessToken: stored,
      refreshCiphertext,
    };
    return { result: { token: fallback, failure } };
  }
  context.retryAt.delete(organizationId);
  // A grant that did not rotate the refresh token leaves the one there is.
  const save = { ...answer.tokens, refreshCiphertext: answer.tokens.refreshCiphertext ?? refreshCiphertext };
  context.log.info(
    { organizationId, expiresAt: save.expiresAt?.toISOString() },
    refusedToken !== undefined
      ? 'refreshed the Linear access token Linear refused'
      : 'refreshed the Linear access token before it expires',
  );
  return { save, result: { token: answer.tokens.accessToken } };
}

type GrantAnswer =
  | { tokens: InstallationTokens & { accessToken: string } }
  | { failed: string; permanent: boolean; retryAfterMs?: number };

/** Tries of one grant when the token endpoint is busy (429) or failing (5xx, no answer). */
const grantTries = 3;
/** The longest one wait between those tries (a longer Retry-After is honoured by the 30 s backoff instead). */
const maxGrantWaitMs = 10_000;

/**
 * The `refresh_token` grant at Linear's token endpoint, retried while Linear is busy or failing
 * (429 with its Retry-After, 5xx, no answer). Only Linear's refusal of the grant itself (4xx:
 * invalid_grant, invalid_client) is permanent. The caller's signal does not cut it short: once the
 * refresh token is sent it may be spent, so its answer is awaited (within its own deadline) and saved.
 */
async function grant(
  context: Pick<TokenContext, 'endpoint' | 'box' | 'now'>,
  refreshToken: string,
): Promise<GrantAnswer> {
  let answer: GrantAnswer = { failed: 'not asked', permanent: false };
  for (let attempt = 1; attempt <= grantTries; attempt += 1) {
    answer = await askTokenEndpoint(context, refreshToken);
    if ('tokens' in answer || answer.permanent || attempt === grantTries) return answer;
    const waitMs = answer.retryAfterMs ?? 500 * 2 ** attempt;
    if (waitMs > maxGrantWaitMs) return answer;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
  return answer;
}

/** One request to the token endpoint, and what its answer means. */
async function askTokenEndpoint(
  context: Pick<TokenContext, 'endpoint' | 'box' | 'now'>,
  refreshToken: string,
): Promise<GrantAnswer> {
  const { tokenUrl, clientId, clientSecret } = context.endpoint;
  let response: Response;
  try {
    response = await (context.endpoint.fetch ?? fetch)(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        client_id: clientId,
        client_secret: clientSecret,
      }),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    return { failed: `the token endpoint could not be reached (${(error as Error).message})`, permanent: false };
  }
  const body = (await response.json().catch(() => ({}))) as { error?: unknown };
  const tokens = response.ok ? tokensToStore(body, context.box, context.now()) : undefined;
  if (tokens) return { tokens };
  const reason = typeof body.error === 'string' ? body.error : `HTTP ${response.status}`;
  const busy = response.status === 408 || response.status === 429 || response.status >= 500;
  const retryAfter = Number(response.headers.get('retry-after'));
  return {
    failed: reason,
    // invalid_grant, invalid_client: this refresh token or app will not be taken again.
    permanent: !busy && response.status >= 400 && response.status < 500,
    ...(busy && Number.isFinite(retryAfter) && retryAfter > 0 && { retryAfterMs: retryAfter * 1000 }),
  };
}

/** SDK clients for a workspace's current token, a new one whenever the token changes. */
export function linearClientsFor(tokens: LinearTokens, organizationId: string, apiUrl: string): LinearClientSource {
  let latest: { token: string; client: LinearClient } | undefined;
  const tokenOf = new WeakMap<LinearClient, string>();
  const clientFor = (token: string) => {
    if (latest?.token !== token) {
      latest = { token, client: linearClient(apiUrl, { accessToken: token }) };
      tokenOf.set(latest.client, token);
    }
    return latest.client;
  };
  return {
    async current(signal) {
      const token = await tokens.current(organizationId, signal);
      if (!token)
        throw new PatchbayError(
          'unauthorized',
          `Patchbay is no longer installed in Linear workspace ${organizationId}`,
        );
      return clientFor(token);
    },
    async refused(client, signal) {
      const refused = tokenOf.get(client);
      const fresh = refused === undefined ? undefined : await tokens.refused(organizationId, refused, signal);
      return fresh === undefined || fresh === refused ? undefined : clientFor(fresh);
    },
  };
}
