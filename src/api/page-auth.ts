import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
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
  return (request) => {
    if (bearer(request.headers.authorization)) return true;
    const given = Buffer.from(readCookie(request.headers.cookie, SESSION_COOKIE) ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}

/**
 * `GET /api/auth` says whether the page must ask for the token; `POST /api/auth` trades the token
 * for the session cookie (it lasts until the browser closes); `DELETE /api/auth` signs out.
 */
export function registerPageAuth(app: ApiServer, options: { apiToken?: string; check?: AccessCheck; secureCookie: boolean }): void {
  const { apiToken, check } = options;
  const open = { config: { public: true } satisfies RouteConfig };
  app.get('/api/auth', open, async (request) => ({ required: apiToken !== undefined, signedIn: apiToken === undefined || check?.(request) === true }));

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
  const parts = [`${SESSION_COOKIE}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Strict'];
  if (secure) parts.push('Secure');
  if (maxAge !== undefined) parts.push(`Max-Age=${maxAge}`);
  return reply.header('set-cookie', parts.join('; ')).header('cache-control', 'no-store');
}

function cookieValue(token: string): string {
  return createHash('sha256').update(`patchbay-page-session:${token}`, 'utf8').digest('base64url');
}

export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
