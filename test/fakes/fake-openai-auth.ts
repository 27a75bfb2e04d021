import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './loopback.ts';

/** Codex's OAuth client id (codex-rs CLIENT_ID); the token endpoint refuses any other. */
const CLIENT_ID = 'app_EMoamEEZ73f0CkXaXp7hrann';

/** What `codex login` writes to auth.json for a ChatGPT sign-in (codex-rs login/src/token_data.rs). */
export type AuthDotJson = {
  OPENAI_API_KEY: null;
  tokens: { id_token: string; access_token: string; refresh_token: string; account_id: string };
  last_refresh: string;
};

type Account = { accountId: string; email: string };
type Access = Account & { expiresAt: number };

export type FakeOpenAIAuth = {
  /** The issuer's base URL (OPENAI_AUTH_URL); the token endpoint is `${url}/oauth/token`. */
  url: string;
  /** A sign-in as `codex login` leaves it, its access token living `accessSeconds` (negative: already expired). */
  signIn(account: Account, accessSeconds: number): AuthDotJson;
  /** The ChatGPT backend's check of a call's credential (fake-openai's `authorize`). */
  authorize(headers: IncomingMessage['headers']): string | undefined;
  /** Revokes a refresh token, as signing out of ChatGPT elsewhere does. */
  revoke(refreshToken: string): void;
  /** The person enters `userCode` at /codex/device and signs in as `account` (device-code sign-in). */
  approve(userCode: string, account: Account): void;
  /** Ends an access token before its `exp` (the backend then answers 401 for it). */
  expire(accessToken: string): void;
  /** Every refresh grant asked, with its answer's status. */
  grants: { status: number; refreshToken: string }[];
  /** Access tokens the backend refused and grants the token endpoint refused; a test asserts what it expects. */
  refused: string[];
  close(): Promise<void>;
};

/** An unsigned JWT with these claims (the backend here, like Patchbay, only reads them). */
function jwt(claims: Record<string, unknown>): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'RS256', typ: 'JWT' })}.${part(claims)}.${randomBytes(16).toString('base64url')}`;
}

/**
 * A loopback auth.openai.com for Codex's ChatGPT sign-in (codex-rs core/src/auth.rs): POST
 * /oauth/token takes the JSON refresh grant `{client_id, grant_type: "refresh_token", refresh_token,
 * scope}` and rotates the refresh token (a spent one answers 401 refresh_token_reused, a revoked one
 * refresh_token_invalidated, an unknown one refresh_token_expired). `authorize` is the ChatGPT
 * backend's side: a known, unexpired access token with its account's chatgpt-account-id.
 */
export async function startFakeOpenAIAuth(options: {
  accessSeconds: number;
  /** How long a grant takes to answer (the real endpoint takes a few hundred ms): concurrent grants overlap. */
  grantDelayMs?: number;
}): Promise<FakeOpenAIAuth> {
  const access = new Map<string, Access>();
  const refresh = new Map<string, { account: Account; state: 'live' | 'spent' | 'revoked' }>();
  const grants: FakeOpenAIAuth['grants'] = [];
  const refused: string[] = [];
  const mint = (account: Account, seconds: number) => {
    const now = Math.floor(Date.now() / 1000);
    const auth = {
      'https://api.openai.com/auth': { chatgpt_account_id: account.accountId, chatgpt_plan_type: 'plus' },
    };
    const accessToken = jwt({ iat: now, exp: now + seconds, ...auth });
    access.set(accessToken, { ...account, expiresAt: (now + seconds) * 1000 });
    const refreshToken = `rt_${randomBytes(24).toString('base64url')}`;
    refresh.set(refreshToken, { account, state: 'live' });
    const idToken = jwt({ iat: now, exp: now + 3600, email: account.email, ...auth });
    return { id_token: idToken, access_token: accessToken, refresh_token: refreshToken };
  };

  const server = createServer((req, res) => {
    void handleToken(req, res).catch(() => res.destroy());
  });
  async function handleToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const refuse = (status: number, code: string, message: string, token = '') => {
      refused.push(`token endpoint: ${code}`);
      grants.push({ status, refreshToken: token });
      send(status, { error: { code, message } });
    };
    if (req.method !== 'POST') return send(404, { error: 'not_found' });
    const raw = await readBody(req);
    if (req.url?.startsWith('/api/accounts/deviceauth/')) return device.handle(req.url, raw, send, refused);
    if (req.url !== '/oauth/token') return send(404, { error: 'not_found' });
    if (String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded')) {
      const account = device.exchange(new URLSearchParams(raw), `http://127.0.0.1:${port}`);
      if (!account) return refuse(400, 'invalid_grant', 'The authorization code is not valid.');
      return send(200, mint(account, options.accessSeconds));
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return refuse(400, 'invalid_request', 'The request body must be JSON.');
    }
    if (!String(req.headers['content-type']).startsWith('application/json'))
      return refuse(400, 'invalid_request', 'Content-Type must be application/json.');
    if (body.client_id !== CLIENT_ID) return refuse(401, 'invalid_client', 'Unknown client.');
    if (body.grant_type !== 'refresh_token' || body.scope !== 'openid profile email')
      return refuse(400, 'invalid_request', 'Unsupported grant or scope.');
    const token = String(body.refresh_token ?? '');
    const known = refresh.get(token);
    if (!known) return refuse(401, 'refresh_token_expired', 'Your refresh token has expired.', token);
    if (known.state === 'spent') return refuse(401, 'refresh_token_reused', 'Refresh token already used.', token);
    if (known.state === 'revoked') return refuse(401, 'refresh_token_invalidated', 'Refresh token revoked.', token);
    known.state = 'spent';
    await new Promise((resolve) => setTimeout(resolve, options.grantDelayMs ?? 0));
    grants.push({ status: 200, refreshToken: token });
    send(200, mint(known.account, options.accessSeconds));
  }

  const device = deviceAuthorization();
  const { port, close } = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    signIn(account, accessSeconds) {
      return {
        OPENAI_API_KEY: null,
        tokens: { ...mint(account, accessSeconds), account_id: account.accountId },
        last_refresh: new Date().toISOString(),
      };
    },
    authorize(headers) {
      const token = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1] ?? '';
      const known = access.get(token);
      const reason = !known
        ? 'unknown access token'
        : known.expiresAt <= Date.now()
          ? 'Provided authentication token is expired. Please try signing in again.'
          : headers['chatgpt-account-id'] !== known.accountId
            ? 'chatgpt-account-id does not match the access token'
            : undefined;
      if (reason) refused.push(`backend: ${reason}`);
      return reason;
    },
    revoke(refreshToken) {
      const known = refresh.get(refreshToken);
      if (known) known.state = 'revoked';
    },
    approve: (userCode, account) => device.approve(userCode, account),
    expire(accessToken) {
      const known = access.get(accessToken);
      if (known) known.expiresAt = 0;
    },
    grants,
    refused,
    close,
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

type Send = (status: number, body: object) => void;

/**
 * Codex's device-code sign-in (codex-rs login/src/device_code_auth.rs): /deviceauth/usercode
 * `{client_id}` answers a device id, a user code and the poll interval (a string, as Codex parses
 * it); /deviceauth/token `{device_auth_id, user_code}` answers 403 until the code is approved, then
 * an authorization code with its PKCE pair, which /oauth/token exchanges (form-encoded, the
 * redirect URI `{issuer}/deviceauth/callback`) once.
 */
function deviceAuthorization() {
  type Pending = { deviceAuthId: string; account?: Account; code?: string; verifier?: string };
  const pending = new Map<string, Pending>();
  const codes = new Map<string, { account: Account; verifier: string }>();
  return {
    handle(url: string, raw: string, send: Send, refused: string[]) {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        refused.push('deviceauth: body is not JSON');
        return send(400, { error: 'invalid_request' });
      }
      if (url === '/api/accounts/deviceauth/usercode') {
        if (body.client_id !== CLIENT_ID) {
          refused.push('deviceauth: unknown client');
          return send(401, { error: 'invalid_client' });
        }
        const userCode = `${randomBytes(2).toString('hex')}-${randomBytes(2).toString('hex')}`.toUpperCase();
        const deviceAuthId = `deviceauth_${randomBytes(8).toString('hex')}`;
        pending.set(userCode, { deviceAuthId });
        return send(200, { device_auth_id: deviceAuthId, user_code: userCode, interval: '1' });
      }
      const entry = pending.get(String(body.user_code));
      if (url !== '/api/accounts/deviceauth/token' || !entry || entry.deviceAuthId !== body.device_auth_id) {
        refused.push('deviceauth: unknown device code');
        return send(404, { error: 'not_found' });
      }
      if (!entry.account) return send(403, { error: { code: 'deviceauth_authorization_pending' } });
      entry.code ??= `ac_${randomBytes(12).toString('hex')}`;
      entry.verifier ??= randomBytes(32).toString('base64url');
      codes.set(entry.code, { account: entry.account, verifier: entry.verifier });
      return send(200, {
        authorization_code: entry.code,
        code_challenge: 'S256-challenge',
        code_verifier: entry.verifier,
      });
    },
    approve(userCode: string, account: Account): void {
      const entry = pending.get(userCode);
      if (!entry) throw new Error(`no device code ${userCode} is pending`);
      entry.account = account;
    },
    /** The account an authorization-code grant signs in, once; undefined when the grant is wrong. */
    exchange(form: URLSearchParams, issuer: string): Account | undefined {
      const code = codes.get(form.get('code') ?? '');
      const ok =
        code &&
        form.get('grant_type') === 'authorization_code' &&
        form.get('client_id') === CLIENT_ID &&
        form.get('redirect_uri') === `${issuer}/deviceauth/callback` &&
        form.get('code_verifier') === code.verifier;
      if (!ok || !code) return undefined;
      codes.delete(form.get('code') ?? '');
      return code.account;
    },
  };
}
