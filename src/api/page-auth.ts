import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { readCookie } from '../core/cookies.ts';
import type { PageSessionIssuer, PageSignInProvider } from '../core/page-sign-in.ts';
import { createBearerCheck } from './bearer-auth.ts';
import type { ApiServer, RouteConfig } from './server.ts';

/** The web page's cookie: a digest of the API token, never the token itself. */
export const SESSION_COOKIE = 'patchbay_session';

const LoginBody = z.object({ token: z.string().min(1).max(1000) });

export type AccessCheck = (request: FastifyRequest) => boolean;

/**
 * Accepts `Authorization: Bearer <token>` (API clients, the CLI) or the page's session cookie.
 * The cookie is HttpOnly and SameSite=Strict: scripts cannot read it and other sites' requests
 * do not carry it.
 */
export function createAccessCheck(token: string): AccessCheck {
  const bearer = createBearerCheck(token);
  const expected = Buffer.from(cookieValue(token));
  const signedIn = createPageSessions(token, false);
  return (request) => {
    if (bearer(request.headers.authorization)) return true;
    const cookie = readCookie(request.headers.cookie, SESSION_COOKIE) ?? '';
    const given = Buffer.from(cookie);
    if (given.length === expected.length && timingSafeEqual(given, expected)) return true;
    return signedIn.verify(cookie) !== undefined;
  };
}

/** How long a sign-in by another identity (GitHub) keeps the page open, at most. */
const SIGN_IN_TTL_MS = 12 * 60 * 60_000;

/**
 * Page sessions for people who signed in with another identity than the token (GitHub sign-in):
 * the cookie names who and until when, under an HMAC keyed by the API token, so changing the token
 * signs everybody out.
 */
export function createPageSessions(token: string, secure: boolean): PageSessionIssuer & { verify(cookie: string): string | undefined } {
  const key = createHash('sha256').update(`patchbay-page-sign-in:${token}`, 'utf8').digest();
  const mac = (payload: string) => createHmac('sha256', key).update(payload).digest('base64url');
  return {
    cookieFor(who) {
      const payload = Buffer.from(JSON.stringify({ who, until: Date.now() + SIGN_IN_TTL_MS })).toString('base64url');
      return cookieHeader(`s1.${payload}.${mac(payload)}`, secure);
    },
    verify(cookie) {
      const [version, payload, signature] = cookie.split('.');
      if (version !== 's1' || !payload || !signature) return undefined;
      const expected = Buffer.from(mac(payload));
      const given = Buffer.from(signature);
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
      try {
        const claim = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { who?: unknown; until?: unknown };
        return typeof claim.who === 'string' && typeof claim.until === 'number' && claim.until > Date.now() ? claim.who : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * `GET /api/auth` says whether the page must ask for the token; `POST /api/auth` trades the token
 * for the session cookie (it lasts until the browser closes); `DELETE /api/auth` signs out.
 */
export function registerPageAuth(
  app: ApiServer,
  options: { apiToken?: string; check?: AccessCheck; secureCookie: boolean; providers?: readonly PageSignInProvider[] },
): void {
  const { apiToken, check } = options;
  const open = { config: { public: true } satisfies RouteConfig };
  app.get('/api/auth', open, async (request) => ({
    required: apiToken !== undefined,
    signedIn: apiToken === undefined || check?.(request) === true,
    // Other ways in than the token (GitHub sign-in), offered on the page's sign-in form.
    providers: apiToken === undefined ? [] : (options.providers ?? []),
  }));

  app.post('/api/auth', open, async (request, reply) => {
    const { token } = LoginBody.parse(request.body);
    if (!apiToken) return reply.code(204).send();
    if (!createBearerCheck(apiToken)(`Bearer ${token}`)) {
      return reply.code(401).send({ error: 'unauthorized', message: 'that is not the API token' });
    }
    return setCookie(reply, cookieValue(apiToken), options.secureCookie).code(204).send();
  });

  app.delete('/api/auth', open, async (_request, reply) => setCookie(reply, '', options.secureCookie, 0).code(204).send());
}

function setCookie(reply: FastifyReply, value: string, secure: boolean, maxAge?: number): FastifyReply {
  return reply.header('set-cookie', cookieHeader(value, secure, maxAge)).header('cache-control', 'no-store');
}

/** The page's session cookie: HttpOnly, SameSite=Strict, for the browser session unless `maxAge`. */
function cookieHeader(value: string, secure: boolean, maxAge?: number): string {
  const parts = [`${SESSION_COOKIE}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Strict'];
  if (secure) parts.push('Secure');
  if (maxAge !== undefined) parts.push(`Max-Age=${maxAge}`);
  return parts.join('; ');
}

function cookieValue(token: string): string {
  return createHash('sha256').update(`patchbay-page-session:${token}`, 'utf8').digest('base64url');
}
