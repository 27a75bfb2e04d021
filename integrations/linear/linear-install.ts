import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { readCookie } from '../../src/core/cookies.ts';
import { createLinearApi, linearClient } from './linear-api.ts';
import type { LinearStore } from './linear-store.ts';
import { tokensToStore } from './linear-tokens.ts';

/** The part of the secret box (PATCHBAY_SECRET_KEY) the install flow uses. */
export type Sealer = {
  seal(plaintext: string): string;
  open(sealed: string): string;
  sign(payload: string, ttlMs: number): string;
  verify(signed: string): string | undefined;
};

const installScopes = 'read,write,app:assignable,app:mentionable';

/** Whether LINEAR_ALLOWED_ORGS (when set) lists the workspace. */
export function orgAllowed(allowedOrgs: readonly string[] | undefined, organizationId: unknown): boolean {
  return !allowedOrgs || (typeof organizationId === 'string' && allowedOrgs.includes(organizationId));
}

/** The OAuth app's settings for the install flow (LINEAR_CLIENT_ID and the rest). */
export type InstallSettings = {
  clientId: string;
  clientSecret: string;
  authorizeUrl: string;
  tokenUrl: string;
  apiUrl: string;
  publicUrl: string;
  box: Sealer;
  fetch?: typeof fetch;
};

type InstallDeps = InstallSettings & { store: LinearStore; log: Logger; allowedOrgs: readonly string[] | undefined };

/**
 * The install flow, as an app (actor=app): /linear/oauth/start sends the browser to Linear with a
 * state bound to that browser; /linear/oauth/callback exchanges the code for tokens, checks the
 * workspace against LINEAR_ALLOWED_ORGS and stores the installation with its tokens sealed.
 */
export function installRoutes(app: FastifyInstance, deps: InstallDeps): void {
  app.get('/linear/oauth/start', async (_req, reply) => startInstall(deps, reply));
  app.get('/linear/oauth/callback', async (req, reply) => finishInstall(deps, req, reply));
}

const callbackUrlOf = (deps: InstallSettings) => `${deps.publicUrl}/linear/oauth/callback`;

function startInstall(deps: InstallDeps, reply: FastifyReply) {
  const url = new URL(deps.authorizeUrl);
  url.searchParams.set('client_id', deps.clientId);
  url.searchParams.set('redirect_uri', callbackUrlOf(deps));
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('scope', installScopes);
  url.searchParams.set('actor', 'app');
  // Bound to this browser (a random cookie whose hash the state carries): a state fed to
  // someone else's browser, or a callback there, installs nothing.
  const nonce = randomBytes(32).toString('base64url');
  url.searchParams.set(
    'state',
    deps.box.sign(JSON.stringify({ kind: 'linear-install', browser: digest(nonce) }), INSTALL_TTL_MS),
  );
  reply.header('set-cookie', installCookie(nonce, deps.publicUrl.startsWith('https:'), INSTALL_TTL_MS / 1000));
  return reply.redirect(url.toString(), 302);
}

/** The callback: the state and this browser's cookie must match before the code is exchanged. */
async function finishInstall(deps: InstallDeps, req: FastifyRequest, reply: FastifyReply) {
  const { code, state } = req.query as { code?: string; state?: string };
  const browser = installBrowser(state ? deps.box.verify(state) : undefined);
  const nonce = readCookie(req.headers.cookie, INSTALL_COOKIE);
  reply.header('set-cookie', installCookie('', deps.publicUrl.startsWith('https:'), 0));
  if (!code || !browser)
    return reply.code(400).type('text/plain').send('Install failed: the request is invalid or expired. Start again.');
  if (!nonce || digest(nonce) !== browser) {
    deps.log.warn('Linear install refused: the callback came to a browser that did not start the install');
    return reply
      .code(400)
      .type('text/plain')
      .send(
        'Install failed: finish the install in the browser where you started it (/linear/oauth/start). Start again.',
      );
  }
  try {
    return await install(deps, code, reply);
  } catch (error) {
    // Not the error object: it may carry the code and the client secret.
    deps.log.warn({ reason: String((error as Error).message) }, 'Linear install failed');
    return reply.code(502).type('text/plain').send('Install failed: Linear did not accept the code. Try again.');
  }
}

/** Exchanges the code, checks the workspace, stores the installation and says so. */
async function install(deps: InstallDeps, code: string, reply: FastifyReply) {
  const response = await (deps.fetch ?? fetch)(deps.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: callbackUrlOf(deps),
      client_id: deps.clientId,
      client_secret: deps.clientSecret,
    }),
    signal: AbortSignal.timeout(15_000),
  });
  const answer = (await response.json().catch(() => ({}))) as { scope?: string | string[] };
  // The access token (about a day) with its refresh token and expiry, sealed for the table.
  const tokens = response.ok ? tokensToStore(answer, deps.box, Date.now()) : undefined;
  if (!tokens) throw new Error(`token exchange answered ${response.status}`);
  const client = linearClient(deps.apiUrl, { accessToken: tokens.accessToken });
  const { organizationId, appUserId } = await installationOf(client, deps.log);
  if (!orgAllowed(deps.allowedOrgs, organizationId)) {
    deps.log.warn({ organizationId }, 'Linear install refused: the workspace is not in LINEAR_ALLOWED_ORGS');
    return reply
      .code(403)
      .type('text/plain')
      .send(
        `This Patchbay works only for the Linear workspaces its operator listed (LINEAR_ALLOWED_ORGS); yours (${organizationId}) is not one of them. Nothing was installed.`,
      );
  }
  const scope = Array.isArray(answer.scope) ? answer.scope.join(',') : (answer.scope ?? installScopes);
  const { accessToken: _plain, ...sealed } = tokens;
  await deps.store.saveInstallation({ organizationId, appUserId, scope, ...sealed });
  deps.log.info(
    {
      organizationId,
      appUserId,
      expiresAt: tokens.expiresAt?.toISOString(),
      refreshable: tokens.refreshCiphertext !== null,
    },
    'Linear app installed',
  );
  if (!deps.allowedOrgs) {
    deps.log.warn(
      { organizationId },
      `LINEAR_ALLOWED_ORGS is not set: any Linear workspace that installs the app runs sessions on this Patchbay's model budget; set LINEAR_ALLOWED_ORGS=${organizationId} to serve this one only`,
    );
  }
  const note = deps.allowedOrgs
    ? ''
    : `\n\nNote for the person who runs Patchbay: LINEAR_ALLOWED_ORGS is not set, so any Linear workspace that installs this app runs sessions here. To serve only this workspace, set LINEAR_ALLOWED_ORGS=${organizationId}.`;
  return reply
    .type('text/plain')
    .send(`Patchbay is installed in your Linear workspace. Delegate an issue to it or mention it to start.${note}`);
}

const INSTALL_COOKIE = 'patchbay_linear_install';
const INSTALL_TTL_MS = 10 * 60_000;

/** HttpOnly, sent only to the install routes; Lax, so Linear's redirect back (a top-level GET) carries it. */
function installCookie(value: string, secure: boolean, maxAgeSeconds: number): string {
  return `${INSTALL_COOKIE}=${value}; Path=/linear/oauth; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** The browser hash an install state carries, when it is one. */
function installBrowser(payload: string | undefined): string | undefined {
  try {
    const value = payload === undefined ? undefined : (JSON.parse(payload) as { kind?: unknown; browser?: unknown });
    return value?.kind === 'linear-install' && typeof value.browser === 'string' ? value.browser : undefined;
  } catch {
    return undefined;
  }
}

function digest(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}

/** The app user's id and its workspace, as Linear recommends storing beside the token. */
async function installationOf(
  client: ReturnType<typeof linearClient>,
  log: Logger,
): Promise<{ organizationId: string; appUserId: string }> {
  const appUserId = await createLinearApi({ client, log }).viewerId();
  const { organization } = await client.client.request<{ organization: { id: string } }, Record<string, unknown>>(
    'query patchbayOrganization { organization { id } }',
    {},
  );
  return { organizationId: organization.id, appUserId };
}
