import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { readCookie } from '../core/cookies.ts';
import type { PageSignInProvider } from '../core/page-sign-in.ts';
import { createBearerCheck } from './bearer-auth.ts';
import { type PageSignIns, SESSION_COOKIE } from './page-sessions.ts';
import type { ApiServer, RouteConfig } from './server.ts';

export { SESSION_COOKIE };

const LoginBody = z.object({ token: z.string().min(1).max(1000) });

export type AccessCheck = (request: FastifyRequest) => Promise<boolean>;

/**
 * Accepts `Authorization: Bearer <token>` (API clients, the CLI) or a live page session cookie
 * (the token's sign-in or another identity's), looked up on the server.
 */
export function createAccessCheck(token: string, sessions: PageSignIns): AccessCheck {
  const bearer = createBearerCheck(token);
  return async (request) => {
    if (bearer(request.headers.authorization)) return true;
    return (await sessions.verify(readCookie(request.headers.cookie, SESSION_COOKIE))) !== undefined;
  };
}

/**
 * `GET /api/auth` says whether the page must ask for the token (and whether it can sign out);
 * `POST /api/auth` trades the token for a page session; `DELETE /api/auth` ends the session on the
 * server and clears the cookie.
 */
export function registerPageAuth(
  app: ApiServer,
  options: {
    apiToken?: string;
    check?: AccessCheck;
    sessions?: PageSignIns;
    providers?: readonly PageSignInProvider[];
  },
): void {
  const { apiToken, check, sessions } = options;
  const open = { config: { public: true } satisfies RouteConfig };
  app.get('/api/auth', open, async (request) => ({
    required: apiToken !== undefined,
    signedIn: apiToken === undefined || (await check?.(request)) === true,
    // Other ways in than the token (GitHub sign-in), offered on the page's sign-in form.
    providers: apiToken === undefined ? [] : (options.providers ?? []),
  }));

  app.post('/api/auth', open, async (request, reply) => {
    const { token } = LoginBody.parse(request.body);
    if (!apiToken || !sessions) return reply.code(204).send();
    if (!createBearerCheck(apiToken)(`Bearer ${token}`)) {
      return reply.code(401).send({ error: 'unauthorized', message: 'that is not the API token' });
    }
    return noStore(reply)
      .header('set-cookie', await sessions.cookieFor('token'))
      .code(204)
      .send();
  });

  app.delete('/api/auth', open, async (request, reply) => {
    if (!sessions) return reply.code(204).send();
    await sessions.revoke(readCookie(request.headers.cookie, SESSION_COOKIE));
    return noStore(reply).header('set-cookie', sessions.clearCookie()).code(204).send();
  });
}

const noStore = (reply: FastifyReply) => reply.header('cache-control', 'no-store');
