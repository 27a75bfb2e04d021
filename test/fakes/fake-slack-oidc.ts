import { createHash, randomBytes } from 'node:crypto';
import type { FakeSlackUser } from './fake-slack-api.ts';

/**
 * Sign in with Slack (OpenID Connect) as Slack serves it (docs.slack.dev: openid.connect.token,
 * openid.connect.userInfo; https://slack.com/.well-known/openid-configuration): the browser's visit
 * to `/openid/connect/authorize` (response_type=code, scope with `openid`, client_id, redirect_uri,
 * state), a single-use code that lives ten minutes, exchanged with the client id and secret and the
 * same redirect_uri for an access token and an id_token, and `userInfo` with that token as Bearer.
 * Refusals are Slack's own error codes; the caller records them.
 */
export type FakeSlackOidc = {
  client: { id: string; secret: string };
  /**
   * A browser signed in to Slack as `userId` opening `authorizeUrl`: where Slack sends it back
   * (`redirect_uri?code=…&state=…`), or the error Slack shows.
   */
  authorize(authorizeUrl: string, userId: string): { redirect: string } | { error: string };
  /** Answers openid.connect.token / openid.connect.userInfo; `bearer` is the Authorization token. */
  call(method: string, args: Record<string, unknown>, bearer: string | undefined): Record<string, unknown>;
};

const CODE_TTL_MS = 10 * 60_000;

export function createFakeSlackOidc(options: {
  users: ReadonlyMap<string, FakeSlackUser>;
  teamId: string;
  now?: () => number;
}): FakeSlackOidc {
  const now = options.now ?? Date.now;
  const client = { id: '2141029472.691202649728', secret: 'e1b9e11dfcd19c1982d5de12921e17e8c' };
  const codes = new Map<string, { userId: string; redirectUri: string; until: number; nonce?: string }>();
  const tokens = new Map<string, string>();

  return {
    client,
    authorize(authorizeUrl, userId) {
      const url = new URL(authorizeUrl);
      const q = url.searchParams;
      if (url.pathname !== '/openid/connect/authorize') return { error: 'not the authorize endpoint' };
      if (q.get('client_id') !== client.id) return { error: 'invalid_client_id' };
      if (q.get('response_type') !== 'code') return { error: 'unsupported_response_type' };
      if (!(q.get('scope') ?? '').split(/[ ,]/).includes('openid')) return { error: 'invalid_scope' };
      const redirectUri = q.get('redirect_uri');
      if (!redirectUri) return { error: 'bad_redirect_uri' };
      if (!options.users.has(userId)) return { error: 'user_not_found' };
      const code = `${options.teamId}.${randomBytes(16).toString('hex')}`;
      codes.set(code, {
        userId,
        redirectUri,
        until: now() + CODE_TTL_MS,
        ...(q.get('nonce') && { nonce: q.get('nonce')! }),
      });
      const back = new URL(redirectUri);
      back.searchParams.set('code', code);
      if (q.get('state') !== null) back.searchParams.set('state', q.get('state')!);
      return { redirect: back.toString() };
    },
    call(method, args, bearer) {
      if (method === 'openid.connect.token') {
        if (args.client_id !== client.id) return { ok: false, error: 'invalid_client_id' };
        if (args.client_secret !== client.secret) return { ok: false, error: 'bad_client_secret' };
        if (args.grant_type !== undefined && args.grant_type !== 'authorization_code')
          return { ok: false, error: 'invalid_grant_type' };
        const entry = typeof args.code === 'string' ? codes.get(args.code) : undefined;
        if (!entry || entry.until < now()) return { ok: false, error: 'invalid_code' };
        codes.delete(String(args.code));
        if (args.redirect_uri !== entry.redirectUri) return { ok: false, error: 'bad_redirect_uri' };
        const accessToken = `xoxp-${options.teamId}-${randomBytes(12).toString('hex')}`;
        tokens.set(accessToken, entry.userId);
        return {
          ok: true,
          access_token: accessToken,
          token_type: 'Bearer',
          id_token: idToken(entry.userId, options.teamId, client.id, entry.nonce),
        };
      }
      if (method === 'openid.connect.userInfo') {
        const userId = bearer ? tokens.get(bearer) : undefined;
        if (!userId) return { ok: false, error: bearer ? 'invalid_auth' : 'not_authed' };
        const user = options.users.get(userId)!;
        return {
          ok: true,
          sub: userId,
          'https://slack.com/user_id': userId,
          'https://slack.com/team_id': options.teamId,
          ...(user.email && { email: user.email, email_verified: true }),
          name: user.realName ?? user.name,
          'https://slack.com/team_name': 'Test',
          'https://slack.com/team_domain': 'patchbay-test',
        };
      }
      return { ok: false, error: 'unknown_method' };
    },
  };
}

/** A JWT of Slack's shape (its signature is not checked by Patchbay, which asks userInfo instead). */
function idToken(userId: string, teamId: string, clientId: string, nonce: string | undefined): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = {
    iss: 'https://slack.com',
    sub: userId,
    aud: clientId,
    exp: Math.floor(Date.now() / 1000) + 3600,
    iat: Math.floor(Date.now() / 1000),
    auth_time: Math.floor(Date.now() / 1000),
    ...(nonce && { nonce }),
    'https://slack.com/user_id': userId,
    'https://slack.com/team_id': teamId,
  };
  const body = `${part({ typ: 'JWT', alg: 'RS256', kid: 'fake' })}.${part(claims)}`;
  return `${body}.${createHash('sha256').update(body).digest('base64url')}`;
}
