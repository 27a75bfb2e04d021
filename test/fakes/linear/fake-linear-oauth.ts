import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Chaos } from '../chaos.ts';
import { answerSlowly, dropBeforeAnswer, networkFaults } from '../chaos-faults.ts';

/**
 * The fake Linear's OAuth, as Linear runs it for apps since October 2025 (all apps since April
 * 2026): the install's code exchange and every `refresh_token` grant at POST /oauth/token hand out
 * an access token that expires after `tokenLifetimeSeconds` (Linear: about a day) and a new refresh
 * token; the refresh token used is spent (rotation), so presenting it again is `invalid_grant`.
 * `advance(ms)` moves this clock, so expiry can be had without waiting. The static tokens (what a
 * test puts in LINEAR_ACCESS_TOKEN or LINEAR_API_KEY) do not expire. Refusals go to `refused`.
 * Under `chaos` the token endpoint is busy at its rate (429 with Retry-After, 503), slow, or drops
 * the connection before redeeming anything (chaos-faults.ts).
 */
export function createFakeLinearOAuth(input: {
  staticTokens: string[];
  tokenLifetimeSeconds: number;
  refused: { operation: string; status: number; message: string }[];
  chaos?: Chaos;
}) {
  const { tokenLifetimeSeconds, refused } = input;
  const clientId = 'linear-fake-client-id';
  const clientSecret = 'linear-fake-client-secret';
  /** Codes issued by `authorize` (what Linear's consent page does). */
  const codes = new Map<string, { redirectUri: string; scope: string }>();
  let skewMs = 0;
  const now = () => Date.now() + skewMs;
  /** OAuth-issued access tokens, with when they stop working. */
  const issuedTokens = new Map<string, { expiresAt: number; scope: string[] }>();
  /** Refresh tokens that can still be used once. */
  const liveRefreshTokens = new Map<string, { scope: string[] }>();
  /** Every grant the token endpoint served, in order. */
  const grants: { grantType: 'authorization_code' | 'refresh_token'; at: number }[] = [];
  /** Every access and refresh token it ever handed out: none may show up in a log or in plain text in a table. */
  const secretsIssued: string[] = [];
  /** Faults of the token endpoint on demand: busy (429 with Retry-After, 5xx) or an answer that is lost. */
  const faults: { status: number; retryAfterSeconds?: number }[] = [];
  let loseAnswers = 0;
  /** Token requests answered with a fault (not refusals of a malformed grant). */
  const faulted: { status: number }[] = [];

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };

  /** What the grant presented is worth: the scope it carries, or the OAuth error it gets. */
  function redeem(form: URLSearchParams): { scope: string[] } | { error: string; description: string } {
    const grantType = form.get('grant_type');
    if (grantType === 'authorization_code') {
      const code = form.get('code') ?? '';
      const issued = codes.get(code);
      if (!issued || form.get('redirect_uri') !== issued.redirectUri)
        return { error: 'invalid_grant', description: 'the code is invalid, used or for another redirect_uri' };
      codes.delete(code);
      return { scope: issued.scope.split(',') };
    }
    if (grantType === 'refresh_token') {
      const presented = form.get('refresh_token') ?? '';
      const live = liveRefreshTokens.get(presented);
      if (!live)
        return { error: 'invalid_grant', description: 'the refresh token is invalid, revoked or already used' };
      liveRefreshTokens.delete(presented);
      return { scope: live.scope };
    }
    return { error: 'unsupported_grant_type', description: `grant_type ${String(grantType)} is not supported` };
  }

  return {
    clientId,
    clientSecret,
    grants,
    secretsIssued,

    /** POST /oauth/token: the authorization code of an install, or a refresh token (rotated on use). */
    async tokenExchange(req: IncomingMessage, res: ServerResponse) {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const grantType = form.get('grant_type');
      const chaos = input.chaos?.roll('linear', 'oauth/token', ['rate-limited', 'unavailable', ...networkFaults]);
      if (chaos === 'dropped') return dropBeforeAnswer(res);
      if (chaos === 'slow') await answerSlowly(input.chaos!, 'linear', 'oauth/token');
      const busy = chaos === 'rate-limited' || chaos === 'unavailable';
      const fault = busy ? { status: chaos === 'rate-limited' ? 429 : 503, retryAfterSeconds: 1 } : faults.shift();
      if (fault) {
        // Busy: nothing redeemed, the refresh token still live.
        if (!busy) faulted.push({ status: fault.status });
        res.writeHead(fault.status, {
          'content-type': 'application/json; charset=utf-8',
          ...(fault.retryAfterSeconds !== undefined && { 'retry-after': String(fault.retryAfterSeconds) }),
        });
        return void res.end(JSON.stringify({ error: fault.status === 429 ? 'rate_limited' : 'server_error' }));
      }
      const invalid = (error: string, description: string) => {
        refused.push({ operation: `oauth/token ${grantType}`, status: 400, message: error });
        send(res, 400, { error, error_description: description });
      };
      if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded'))
        return invalid('invalid_request', 'the body must be form-encoded');
      if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret)
        return invalid('invalid_client', 'unknown client or wrong secret');
      const redeemed = redeem(form);
      if ('error' in redeemed) return invalid(redeemed.error, redeemed.description);
      grants.push({ grantType: grantType as 'authorization_code' | 'refresh_token', at: now() });
      const access = `lin_oat_${randomUUID().replaceAll('-', '')}`;
      const refresh = `lin_ort_${randomUUID().replaceAll('-', '')}`;
      issuedTokens.set(access, { expiresAt: now() + tokenLifetimeSeconds * 1000, scope: redeemed.scope });
      liveRefreshTokens.set(refresh, { scope: redeemed.scope });
      secretsIssued.push(access, refresh);
      if (loseAnswers > 0) {
        // Redeemed and rotated, and the answer never arrives: the old refresh token is spent.
        loseAnswers -= 1;
        return void res.socket?.destroy();
      }
      send(res, 200, {
        access_token: access,
        token_type: 'Bearer',
        expires_in: tokenLifetimeSeconds,
        refresh_token: refresh,
        scope: redeemed.scope,
      });
    },

    /** Whether a request's Authorization is a token Linear takes right now. */
    authorized(auth: string | undefined): boolean {
      if (auth !== undefined && input.staticTokens.includes(auth)) return true;
      const issued = auth?.startsWith('Bearer ') ? issuedTokens.get(auth.slice('Bearer '.length)) : undefined;
      return issued !== undefined && issued.expiresAt > now();
    },

    /** Moves the fake's clock forward: tokens issued before expire as if that time had passed. */
    advance(ms: number) {
      skewMs += ms;
    },

    /** The next token requests answer these faults (429 with Retry-After, 5xx), redeeming nothing. */
    failTokens(...next: { status: number; retryAfterSeconds?: number }[]) {
      faults.push(...next);
    },
    /** The next `count` grants are redeemed (the refresh token spent) and their answers lost. */
    loseTokenAnswers(count = 1) {
      loseAnswers = count;
    },
    faulted,

    /** Every refresh token stops working (an admin removed the app, or Linear revoked them). */
    revokeRefreshTokens() {
      liveRefreshTokens.clear();
    },

    /** What Linear's consent page does for an admin who approves: a code for the redirect URI. */
    authorize(authorizeUrl: string): { redirect: string } {
      const url = new URL(authorizeUrl);
      if (url.searchParams.get('client_id') !== clientId) throw new Error('unknown client_id');
      if (url.searchParams.get('actor') !== 'app') throw new Error('an agent installs with actor=app');
      const code = randomUUID();
      const redirectUri = url.searchParams.get('redirect_uri')!;
      codes.set(code, { redirectUri, scope: url.searchParams.get('scope') ?? '' });
      return {
        redirect: `${redirectUri}?code=${code}&state=${encodeURIComponent(url.searchParams.get('state') ?? '')}`,
      };
    },
  };
}
