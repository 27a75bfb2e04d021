import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Webhooks } from '@octokit/webhooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { readCookie } from '../../src/core/cookies.ts';
import type { DeliveryInbox } from '../../src/core/inbound-surface.ts';
import type { IdentityProof } from '../../src/core/identity-proof.ts';
import type { PageSessionIssuer } from '../../src/core/page-sign-in.ts';
import type { GitHubClient } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';
import { githubDedupeKey, githubOrderKey } from './github-surface.ts';
import type { SecretBox } from './secret-box.ts';

/**
 * The webhook signature check, by @octokit/webhooks (GitHub's SDK): whether `signature` is
 * `sha256=` + hex HMAC-SHA256 of the body under the webhook secret, compared in constant time.
 * Only the verifier is used: deliveries are stored and worked by the inbound pipeline, not by the
 * SDK's event emitter (see docs/architecture.md, "Vendor SDKs").
 */
export function signatureVerifier(secret: string): (body: Buffer, signature: string | undefined) => Promise<boolean> {
  const webhooks = new Webhooks({ secret });
  return async (body, signature) =>
    signature?.startsWith('sha256=') ? webhooks.verify(body.toString('utf8'), signature) : false;
}

/** GitHub's documented payload cap (it does not deliver a larger one). */
export const GITHUB_WEBHOOK_MAX_BYTES = 25 * 1024 * 1024;

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * An onRequest hook: a webhook with no signature header at all is refused (401) before a byte of
 * its body is read.
 */
function refuseUnsigned(log: Logger) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    if (/^sha256=[0-9a-f]{64}$/.test(header(req.headers['x-hub-signature-256']) ?? '')) return;
    log.warn(
      { delivery: header(req.headers['x-github-delivery']) },
      'GitHub webhook without a signature refused before its body was read',
    );
    return reply.code(401).header('connection', 'close').send();
  };
}

/**
 * POST /github/webhooks: verifies the signature on the raw body (401 and nothing else when it is
 * wrong), stores the delivery in the inbound pipeline (a delivery whose meaning was stored before,
 * a redelivery or a replay, is acknowledged and dropped), and answers at once; the pipeline and the
 * GitHub surface do the rest. Also the sign-in routes when OAuth is configured.
 */
export function githubRoutes(deps: {
  webhookSecret: string;
  store: GitHubStore;
  inbox: DeliveryInbox;
  client: GitHubClient;
  oauth?: {
    clientId: string;
    box: SecretBox;
    gitUrl: string;
    publicUrl: string;
    page?: PageSignInRule;
    proofs?: readonly IdentityProof[];
  };
  log: Logger;
}) {
  const verify = signatureVerifier(deps.webhookSecret);
  return async function routes(app: FastifyInstance): Promise<void> {
    // Every body stays raw bytes in this scope, whatever its content type, so a request that is not
    // GitHub's is refused by the signature check (401) rather than by Fastify's parsers (415).
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: GITHUB_WEBHOOK_MAX_BYTES }, (_req, body, done) =>
      done(null, body),
    );

    // A body past GitHub's cap is refused while it streams (413), never buffered whole.
    const signed = refuseUnsigned(deps.log);
    app.post('/github/webhooks', { onRequest: signed }, async (req, reply) => {
      const body = req.body;
      if (!Buffer.isBuffer(body) || !(await verify(body, header(req.headers['x-hub-signature-256'])))) {
        deps.log.warn(
          { delivery: header(req.headers['x-github-delivery']) },
          'GitHub webhook with a bad signature refused: check GITHUB_WEBHOOK_SECRET against the App settings',
        );
        return reply.code(401).send();
      }
      const event = header(req.headers['x-github-event']);
      const deliveryId = header(req.headers['x-github-delivery']);
      // Signed yet unusable: a redelivery would carry the same bytes, so it is logged and taken.
      const drop = (reason: string) => {
        deps.log.warn(
          { delivery: deliveryId, event, bytes: body.length, reason },
          'signed GitHub webhook could not be read; acknowledged and dropped',
        );
        return reply.code(200).send({ ok: false, ignored: reason });
      };
      if (!event || !deliveryId) return drop('X-GitHub-Event and X-GitHub-Delivery are required');
      const text = body.toString('utf8');
      let payload: unknown;
      try {
        payload = JSON.parse(text);
      } catch {
        return drop('body is not JSON');
      }
      if (typeof payload !== 'object' || payload === null) return drop('body is not a JSON object');
      const fields = payload as Record<string, unknown>;
      const orderKey = githubOrderKey(event, fields);
      const stored = await deps.inbox.accept({
        source: 'github',
        dedupeKey: githubDedupeKey(text, fields),
        deliveryId,
        kind: event,
        body: text,
        ...(orderKey && { orderKey }),
      });
      if (stored === 'duplicate') return reply.code(200).send({ ok: true, duplicate: true });
      return reply.code(202).send({ ok: true });
    });

    const oauth = deps.oauth;
    if (!oauth) return;
    const callbackUrl = `${oauth.publicUrl}/github/oauth/callback`;
    const secureCookie = oauth.publicUrl.startsWith('https:');

    // The link is signed by Patchbay (see oauthStartLink), so nobody can bind their GitHub account
    // to someone else's chat identity. The state is bound to the browser that opened the link (a
    // random cookie whose hash it carries), so a link forwarded to someone else, or a state fed to
    // another person's browser, cannot attach their GitHub account to the sender.
    const authorize = (reply: FastifyReply, claim: Omit<OAuthState, 'browser'> | Omit<PageState, 'browser'>) => {
      const nonce = randomBytes(32).toString('base64url');
      const state = oauth.box.sign(JSON.stringify({ ...claim, browser: digest(nonce) }), OAUTH_STATE_TTL_MS);
      const url = new URL(`${oauth.gitUrl}/login/oauth/authorize`);
      url.searchParams.set('client_id', oauth.clientId);
      url.searchParams.set('redirect_uri', callbackUrl);
      url.searchParams.set('state', state);
      reply.header('set-cookie', browserCookie(nonce, secureCookie, OAUTH_STATE_TTL_MS / 1000));
      return reply.redirect(url.toString(), 302);
    };

    // Before GitHub: the browser proves it is the person the link was made for (Sign in with Slack
    // for a Slack identity; for a GitHub identity, GitHub's own sign-in must name that account).
    const proveUrl = `${oauth.publicUrl}/github/oauth/prove`;
    app.get('/github/oauth/start', async (req, reply) => {
      const link = (req.query as { link?: string }).link;
      const actor = link ? oauth.box.verify(link) : undefined;
      if (!actor)
        return reply
          .code(400)
          .type('text/plain')
          .send('This sign-in link is invalid or expired. Ask Patchbay for a new one.');
      if (actor.startsWith('github:')) return authorize(reply, { kind: 'oauth-state', actor });
      const proof = oauth.proofs?.find((p) => actor.startsWith(`${p.source}:`));
      if (!proof) {
        deps.log.warn(
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
      const state = oauth.box.sign(
        JSON.stringify({ kind: 'identity-proof', actor, browser: digest(nonce) } satisfies ProofState),
        OAUTH_STATE_TTL_MS,
      );
      reply.header('set-cookie', browserCookie(nonce, secureCookie, OAUTH_STATE_TTL_MS / 1000));
      return reply.redirect(
        proof.authorizeUrl({ state, redirectUri: proveUrl, nonce: randomBytes(16).toString('base64url') }),
        302,
      );
    });

    app.get(
      '/github/oauth/prove',
      {
        logSerializers: {
          req: (req: { method: string }) => ({ method: req.method, url: '/github/oauth/prove?[redacted]' }),
        },
      },
      async (req, reply) => {
        const { code, state } = req.query as { code?: string; state?: string };
        const claim = state ? parseProofState(oauth.box.verify(state)) : undefined;
        const nonce = readCookie(req.headers.cookie, OAUTH_COOKIE);
        // Every way out but the next step (which sets its own cookie) spends the browser's cookie.
        const fail = (status: number, text: string) =>
          reply
            .header('set-cookie', browserCookie('', secureCookie, 0))
            .code(status)
            .type('text/plain')
            .send(text);
        if (!code || !claim || !nonce || !safeEqual(digest(nonce), claim.browser)) {
          return fail(
            400,
            'Sign-in failed: the request is invalid or expired, or came to another browser than the one that opened the link. Ask Patchbay for a new link.',
          );
        }
        const proof = oauth.proofs?.find((p) => claim.actor.startsWith(`${p.source}:`));
        if (!proof) return fail(400, 'Sign-in failed: the request is invalid or expired.');
        let proven: string;
        try {
          proven = await proof.provenActor({ code, redirectUri: proveUrl, signal: AbortSignal.timeout(20_000) });
        } catch (error) {
          deps.log.warn({ reason: String((error as Error).message) }, `Sign in with ${proof.name} failed`);
          return fail(502, `Sign-in failed: ${proof.name} did not accept the sign-in. Ask Patchbay for a new link.`);
        }
        if (proven !== claim.actor) {
          deps.log.warn(
            { actorKey: claim.actor, proven },
            'GitHub sign-in link refused: it was opened by another person than the one it was made for (a forwarded link)',
          );
          return fail(
            403,
            `This link was made for another ${proof.name} user. Nothing was connected. Ask Patchbay for your own link ("connect github").`,
          );
        }
        return authorize(reply, { kind: 'oauth-state', actor: claim.actor });
      },
    );

    // Signing in to the web page: anyone may start; the callback lets in only the allowed people.
    if (oauth.page) app.get(PAGE_SIGN_IN_PATH, async (_req, reply) => authorize(reply, { kind: 'page-sign-in' }));

    // The request log shows the route without its query: the code and state are credentials.
    const withoutQuery = {
      req: (req: { method: string }) => ({ method: req.method, url: '/github/oauth/callback?[redacted]' }),
    };
    app.get('/github/oauth/callback', { logSerializers: withoutQuery }, async (req, reply) => {
      const { code, state } = req.query as { code?: string; state?: string };
      const claim = state ? parseState(oauth.box.verify(state)) : undefined;
      if (!code || !claim)
        return reply.code(400).type('text/plain').send('Sign-in failed: the request is invalid or expired.');
      const nonce = readCookie(req.headers.cookie, OAUTH_COOKIE);
      // Spent either way: a state is good for one try in one browser.
      reply.header('set-cookie', browserCookie('', secureCookie, 0));
      if (!nonce || !safeEqual(digest(nonce), claim.browser)) {
        deps.log.warn(
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
      if (claim.kind === 'page-sign-in') return signInToPage(code, state!, reply);
      const actorKey = claim.actor;
      try {
        const { authentication } = await deps.client.app.oauth.createToken({
          code,
          state: state!,
          redirectUrl: callbackUrl,
        });
        const user = deps.client.forUser(authentication.token);
        const { data: me } = await user.request('GET /user');
        if (actorKey.startsWith('github:') && actorKey !== `github:${me.id}`) {
          deps.log.warn(
            { actorKey, login: me.login },
            'GitHub sign-in refused: the link was made for another GitHub account',
          );
          return reply
            .code(403)
            .type('text/plain')
            .send(`This link was made for another GitHub account than @${me.login}. Nothing was connected.`);
        }
        await deps.store.saveUserToken({
          actorKey,
          login: me.login,
          githubId: Number(me.id),
          ciphertext: oauth.box.seal(authentication.token),
        });
        deps.log.info({ actorKey, login: me.login }, 'GitHub account connected');
        return reply
          .type('text/plain')
          .send(`Connected GitHub account @${me.login}. Pull requests you ask Patchbay for will be opened as you.`);
      } catch (error) {
        // Not the error object: octokit's OAuth errors carry the request, client_secret and code included.
        const { status, message } = error as { status?: unknown; message?: unknown };
        deps.log.warn({ status, reason: String(message) }, 'GitHub sign-in failed');
        return reply.code(502).type('text/plain').send('Sign-in failed: GitHub did not accept the code. Try again.');
      }
    });

    /** The page's sign-in: who the code belongs to, whether they are allowed, then the page's cookie. */
    async function signInToPage(code: string, state: string, reply: FastifyReply) {
      const page = oauth!.page;
      if (!page) return reply.code(400).type('text/plain').send('Sign-in to the page with GitHub is not set up here.');
      let login: string;
      try {
        const { authentication } = await deps.client.app.oauth.createToken({ code, state, redirectUrl: callbackUrl });
        const user = deps.client.forUser(authentication.token);
        login = (await user.request('GET /user')).data.login;
        if (!(await allowedOnPage(page, login, user))) {
          deps.log.warn({ login }, 'GitHub sign-in to the page refused: not an allowed user or organization member');
          return reply
            .code(403)
            .type('text/plain')
            .send(
              `@${login} may not open this Patchbay's page. Ask the person who runs it to add you to WEB_SIGNIN_GITHUB_USERS${page.org ? ` or the ${page.org} organization` : ''}.`,
            );
        }
      } catch (error) {
        const { status, message } = error as { status?: unknown; message?: unknown };
        deps.log.warn({ status, reason: String(message) }, 'GitHub sign-in to the page failed');
        return reply.code(502).type('text/plain').send('Sign-in failed: GitHub did not accept the code. Try again.');
      }
      deps.log.info({ login }, 'signed in to the page with GitHub');
      return reply
        .header('set-cookie', await page.sessions.cookieFor(`github:${login}`))
        .header('cache-control', 'no-store')
        .redirect('/', 302);
    }
  };
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
    if ((error as { status?: number }).status === 404) return false;
    throw error;
  }
}

const OAUTH_COOKIE = 'patchbay_oauth_browser';
const OAUTH_STATE_TTL_MS = 10 * 60_000;

/** What the signed OAuth state carries: whose sign-in, and a hash of the browser's cookie. */
type OAuthState = { kind: 'oauth-state'; actor: string; browser: string };
/** A sign-in to the web page: nobody's chat identity, only the browser. */
type PageState = { kind: 'page-sign-in'; browser: string };
/** The step before GitHub: proving (Sign in with Slack) that this browser is `actor`. */
type ProofState = { kind: 'identity-proof'; actor: string; browser: string };

function parseProofState(payload: string | undefined): ProofState | undefined {
  try {
    const value = payload === undefined ? undefined : (JSON.parse(payload) as Partial<ProofState>);
    return value?.kind === 'identity-proof' && typeof value.actor === 'string' && typeof value.browser === 'string'
      ? (value as ProofState)
      : undefined;
  } catch {
    return undefined;
  }
}

function parseState(payload: string | undefined): OAuthState | PageState | undefined {
  if (payload === undefined) return undefined;
  try {
    const value = JSON.parse(payload) as Partial<OAuthState | PageState>;
    if (typeof value.browser !== 'string') return undefined;
    if (value.kind === 'page-sign-in') return value as PageState;
    return value.kind === 'oauth-state' && typeof value.actor === 'string' ? (value as OAuthState) : undefined;
  } catch {
    return undefined;
  }
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
