import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import { readCookie } from '../../src/core/cookies.ts';
import type { IdentityProof } from '../../src/core/identity-proof.ts';
import type { PageSessionIssuer } from '../../src/core/page-sign-in.ts';
import type { GitHubClient } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';
import type { SecretBox } from './secret-box.ts';

/** How GitHub sign-in is configured: the OAuth App's client, and who may sign in to the page. */
export type OAuthOptions = {
  clientId: string;
  box: SecretBox;
  gitUrl: string;
  publicUrl: string;
  page?: PageSignInRule;
  proofs?: readonly IdentityProof[];
};

/** What every sign-in route reads: the options, where GitHub and the proof send the browser back, the stores. */
type OAuthRoutes = {
  oauth: OAuthOptions;
  client: GitHubClient;
  store: GitHubStore;
  log: Logger;
  callbackUrl: string;
  proveUrl: string;
  secureCookie: boolean;
};

/**
 * The sign-in routes: /github/oauth/start (a person's signed link), /github/oauth/prove (Sign in
 * with Slack first, for a chat identity), the page's sign-in, and /github/oauth/callback, which
 * stores the person's token or signs them in to the page.
 */
export function registerOAuthRoutes(
  app: FastifyInstance,
  deps: { oauth: OAuthOptions; client: GitHubClient; store: GitHubStore; log: Logger },
): void {
  const ctx: OAuthRoutes = {
    ...deps,
    callbackUrl: `${deps.oauth.publicUrl}/github/oauth/callback`,
    proveUrl: `${deps.oauth.publicUrl}/github/oauth/prove`,
    secureCookie: deps.oauth.publicUrl.startsWith('https:'),
  };
  app.get('/github/oauth/start', (req, reply) => startSignIn(ctx, req, reply));
  app.get(
    '/github/oauth/prove',
    {
      logSerializers: {
        req: (req: { method: string }) => ({ method: req.method, url: '/github/oauth/prove?[redacted]' }),
      },
    },
    (req, reply) => proveIdentity(ctx, req, reply),
  );
  // Signing in to the web page: anyone may start; the callback lets in only the allowed people.
  if (ctx.oauth.page)
    app.get(PAGE_SIGN_IN_PATH, async (_req, reply) => authorize(ctx, reply, { kind: 'page-sign-in' }));
  // The request log shows the route without its query: the code and state are credentials.
  const withoutQuery = {
    req: (req: { method: string }) => ({ method: req.method, url: '/github/oauth/callback?[redacted]' }),
  };
  app.get('/github/oauth/callback', { logSerializers: withoutQuery }, (req, reply) => finishSignIn(ctx, req, reply));
}

/**
 * Sends the browser to GitHub's authorization. The link is signed by Patchbay (see
 * oauthStartLink), so nobody can bind their GitHub account to someone else's chat identity. The
 * state is bound to the browser that opened the link (a random cookie whose hash it carries), so a
 * link forwarded to someone else, or a state fed to another person's browser, cannot attach their
 * GitHub account to the sender.
 */
function authorize(
  ctx: OAuthRoutes,
  reply: FastifyReply,
  claim: Omit<OAuthState, 'browser'> | Omit<PageState, 'browser'>,
) {
  const nonce = randomBytes(32).toString('base64url');
  const state = ctx.oauth.box.sign(JSON.stringify({ ...claim, browser: digest(nonce) }), OAUTH_STATE_TTL_MS);
  const url = new URL(`${ctx.oauth.gitUrl}/login/oauth/authorize`);
  url.searchParams.set('client_id', ctx.oauth.clientId);
  url.searchParams.set('redirect_uri', ctx.callbackUrl);
  url.searchParams.set('state', state);
  reply.header('set-cookie', browserCookie(nonce, ctx.secureCookie, OAUTH_STATE_TTL_MS / 1000));
  return reply.redirect(url.toString(), 302);
}

/**
 * A person's sign-in link. Before GitHub, the browser proves it is the person the link was made for
 * (Sign in with Slack for a Slack identity; for a GitHub identity, GitHub's own sign-in must name
 * that account).
 */
async function startSignIn(ctx: OAuthRoutes, req: FastifyRequest, reply: FastifyReply) {
  const { link } = StartQuery.parse(req.query);
  const actor = link ? ctx.oauth.box.verify(link) : undefined;
  if (!actor)
    return reply
      .code(400)
      .type('text/plain')
      .send('This sign-in link is invalid or expired. Ask Patchbay for a new one.');
  if (actor.startsWith('github:')) return authorize(ctx, reply, { kind: 'oauth-state', actor });
  const proof = ctx.oauth.proofs?.find((p) => actor.startsWith(`${p.source}:`));
  if (!proof) {
    ctx.log.warn(
      { actorKey: actor },
      'GitHub sign-in link refused: nothing here can prove who opened it (Sign in with Slack needs SLACK_CLIENT_ID and SLACK_CLIENT_SECRET)',
    );
    return reply
      .code(400)
      .type('text/plain')
      .send(
        'This Patchbay cannot check who opened this link, so it connects no GitHub account from it. Ask the person who runs Patchbay to set up Sign in with Slack.',
      );
  }
  const nonce = randomBytes(32).toString('base64url');
  const state = ctx.oauth.box.sign(
    JSON.stringify({ kind: 'identity-proof', actor, browser: digest(nonce) } satisfies ProofState),
    OAUTH_STATE_TTL_MS,
  );
  reply.header('set-cookie', browserCookie(nonce, ctx.secureCookie, OAUTH_STATE_TTL_MS / 1000));
  return reply.redirect(
    proof.authorizeUrl({ state, redirectUri: ctx.proveUrl, nonce: randomBytes(16).toString('base64url') }),
    302,
  );
}

/** Back from the identity proof: the proven person must be the one the link was made for. */
async function proveIdentity(ctx: OAuthRoutes, req: FastifyRequest, reply: FastifyReply) {
  const { code, state } = CallbackQuery.parse(req.query);
  const claim = state ? parseProofState(ctx.oauth.box.verify(state)) : undefined;
  const nonce = readCookie(req.headers.cookie, OAUTH_COOKIE);
  // Every way out but the next step (which sets its own cookie) spends the browser's cookie.
  const fail = (status: number, text: string) =>
    reply
      .header('set-cookie', browserCookie('', ctx.secureCookie, 0))
      .code(status)
      .type('text/plain')
      .send(text);
  if (!code || !claim || !nonce || !safeEqual(digest(nonce), claim.browser)) {
    return fail(
      400,
      'Sign-in failed: the request is invalid or expired, or came to another browser than the one that opened the link. Ask Patchbay for a new link.',
    );
  }
  const proof = ctx.oauth.proofs?.find((p) => claim.actor.startsWith(`${p.source}:`));
  if (!proof) return fail(400, 'Sign-in failed: the request is invalid or expired.');
  let proven: string;
  try {
    proven = await proof.provenActor({ code, redirectUri: ctx.proveUrl, signal: AbortSignal.timeout(20_000) });
  } catch (error) {
    ctx.log.warn({ reason: failure(error).message }, `Sign in with ${proof.name} failed`);
    return fail(502, `Sign-in failed: ${proof.name} did not accept the sign-in. Ask Patchbay for a new link.`);
  }
  if (proven !== claim.actor) {
    ctx.log.warn(
      { actorKey: claim.actor, proven },
      'GitHub sign-in link refused: it was opened by another person than the one it was made for (a forwarded link)',
    );
    return fail(
      403,
      `This link was made for another ${proof.name} user. Nothing was connected. Ask Patchbay for your own link ("connect github").`,
    );
  }
  return authorize(ctx, reply, { kind: 'oauth-state', actor: claim.actor });
}

/** Back from GitHub: a page sign-in, or the person's token stored for pull requests opened as them. */
async function finishSignIn(ctx: OAuthRoutes, req: FastifyRequest, reply: FastifyReply) {
  const { code, state } = CallbackQuery.parse(req.query);
  const claim = state ? parseState(ctx.oauth.box.verify(state)) : undefined;
  if (!code || !claim)
    return reply.code(400).type('text/plain').send('Sign-in failed: the request is invalid or expired.');
  const nonce = readCookie(req.headers.cookie, OAUTH_COOKIE);
  // Spent either way: a state is good for one try in one browser.
  reply.header('set-cookie', browserCookie('', ctx.secureCookie, 0));
  if (!nonce || !safeEqual(digest(nonce), claim.browser)) {
    ctx.log.warn(
      { ...(claim.kind === 'oauth-state' && { actorKey: claim.actor }) },
      'GitHub sign-in refused: the callback came to a browser that did not open the sign-in link',
    );
    return reply
      .code(400)
      .type('text/plain')
      .send(
        'Sign-in failed: finish signing in in the same browser where you opened the link Patchbay sent you. Ask Patchbay for a new link if you need one.',
      );
  }
  if (claim.kind === 'page-sign-in') return signInToPage(ctx, code, state!, reply);
  const actorKey = claim.actor;
  try {
    const { authentication } = await ctx.client.app.oauth.createToken({
      code,
      state: state!,
      redirectUrl: ctx.callbackUrl,
    });
    const user = ctx.client.forUser(authentication.token);
    const { data: me } = await user.request('GET /user');
    if (actorKey.startsWith('github:') && actorKey !== `github:${me.id}`) {
      ctx.log.warn(
        { actorKey, login: me.login },
        'GitHub sign-in refused: the link was made for another GitHub account',
      );
      return reply
        .code(403)
        .type('text/plain')
        .send(`This link was made for another GitHub account than @${me.login}. Nothing was connected.`);
    }
    await ctx.store.saveUserToken({
      actorKey,
      login: me.login,
      githubId: Number(me.id),
      ciphertext: ctx.oauth.box.seal(authentication.token),
    });
    ctx.log.info({ actorKey, login: me.login }, 'GitHub account connected');
    return reply
      .type('text/plain')
      .send(`Connected GitHub account @${me.login}. Pull requests you ask Patchbay for will be opened as you.`);
  } catch (error) {
    // Not the error object: octokit's OAuth errors carry the request, client_secret and code included.
    const { status, message } = failure(error);
    ctx.log.warn({ status, reason: message }, 'GitHub sign-in failed');
    return reply.code(502).type('text/plain').send('Sign-in failed: GitHub did not accept the code. Try again.');
  }
}

async function signInToPage(ctx: OAuthRoutes, code: string, state: string, reply: FastifyReply) {
  const page = ctx.oauth.page;
  if (!page) return reply.code(400).type('text/plain').send('Sign-in to the page with GitHub is not set up here.');
  let login: string;
  try {
    const { authentication } = await ctx.client.app.oauth.createToken({ code, state, redirectUrl: ctx.callbackUrl });
    const user = ctx.client.forUser(authentication.token);
    login = (await user.request('GET /user')).data.login;
    if (!(await allowedOnPage(page, login, user))) {
      ctx.log.warn({ login }, 'GitHub sign-in to the page refused: not an allowed user or organization member');
      return reply
        .code(403)
        .type('text/plain')
        .send(
          `@${login} may not open this Patchbay's page. Ask the person who runs it to add you to WEB_SIGNIN_GITHUB_USERS${page.org ? ` or the ${page.org} organization` : ''}.`,
        );
    }
  } catch (error) {
    const { status, message } = failure(error);
    ctx.log.warn({ status, reason: message }, 'GitHub sign-in to the page failed');
    return reply.code(502).type('text/plain').send('Sign-in failed: GitHub did not accept the code. Try again.');
  }
  ctx.log.info({ login }, 'signed in to the page with GitHub');
  return reply
    .header('set-cookie', await page.sessions.cookieFor(`github:${login}`))
    .header('cache-control', 'no-store')
    .redirect('/', 302);
}

/** Who may sign in to the page with GitHub, and how their page session is made. */
export type PageSignInRule = { users: readonly string[]; org?: string; sessions: PageSessionIssuer };

/** The route that starts signing in to the page with GitHub. */
export const PAGE_SIGN_IN_PATH = '/github/oauth/page';

/**
 * A listed login, or an active member of the organization (asked with the person's own token:
 * GitHub answers 404 to a non-member, and 403 when the App lacks the Members permission).
 */
async function allowedOnPage(
  page: PageSignInRule,
  login: string,
  user: ReturnType<GitHubClient['forUser']>,
): Promise<boolean> {
  if (page.users.includes(login.toLowerCase())) return true;
  if (!page.org) return false;
  try {
    const { data } = await user.request('GET /user/memberships/orgs/{org}', { org: page.org });
    return data.state === 'active';
  } catch (error) {
    if (failure(error).status === 404) return false;
    throw error;
  }
}

const OAUTH_COOKIE = 'patchbay_oauth_browser';
const OAUTH_STATE_TTL_MS = 10 * 60_000;

/** What the signed OAuth state carries: whose sign-in, and a hash of the browser's cookie. */
const OAuthState = z.object({ kind: z.literal('oauth-state'), actor: z.string(), browser: z.string() });
type OAuthState = z.infer<typeof OAuthState>;
/** A sign-in to the web page: nobody's chat identity, only the browser. */
const PageState = z.object({ kind: z.literal('page-sign-in'), browser: z.string() });
type PageState = z.infer<typeof PageState>;
/** The step before GitHub: proving (Sign in with Slack) that this browser is `actor`. */
const ProofState = z.object({ kind: z.literal('identity-proof'), actor: z.string(), browser: z.string() });
type ProofState = z.infer<typeof ProofState>;

/** A query parameter as people's browsers send it: one string, or nothing usable. */
const queryValue = z.string().optional().catch(undefined);
const StartQuery = z.object({ link: queryValue });
const CallbackQuery = z.object({ code: queryValue, state: queryValue });

/** What an error thrown by octokit or fetch says, without the error itself (it can carry the request). */
function failure(error: unknown): { status: number | undefined; message: string } {
  const read = z.object({ status: z.number().optional().catch(undefined), message: z.unknown() }).safeParse(error);
  return read.success
    ? { status: read.data.status, message: String(read.data.message) }
    : { status: undefined, message: String(error) };
}

/** A signed state's JSON read as `shape`, or undefined when it is not one. */
function parseJson<T>(shape: z.ZodType<T>, payload: string | undefined): T | undefined {
  if (payload === undefined) return undefined;
  try {
    const value = shape.safeParse(JSON.parse(payload));
    return value.success ? value.data : undefined;
  } catch {
    return undefined;
  }
}

function parseProofState(payload: string | undefined): ProofState | undefined {
  return parseJson(ProofState, payload);
}

function parseState(payload: string | undefined): OAuthState | PageState | undefined {
  return parseJson(z.union([OAuthState, PageState]), payload);
}

/** HttpOnly, only sent to the sign-in routes; Lax, so GitHub's redirect back (a top-level GET) carries it. */
function browserCookie(value: string, secure: boolean, maxAgeSeconds: number): string {
  return `${OAUTH_COOKIE}=${value}; Path=/github/oauth; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

function digest(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The sign-in link to send a person (in their chat): valid for an hour, bound to their actor. */
export function oauthStartLink(box: SecretBox, publicUrl: string, actor: { source: string; id: string }): string {
  return `${publicUrl}/github/oauth/start?link=${encodeURIComponent(box.sign(`${actor.source}:${actor.id}`, 60 * 60_000))}`;
}
