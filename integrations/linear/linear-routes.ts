import { createHash, randomBytes } from 'node:crypto';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { readCookie } from '../../src/core/cookies.ts';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { linearClient, createLinearApi } from './linear-api.ts';
import type { DeliveryInbox } from '../../src/core/inbound-surface.ts';
import type { LinearStore } from './linear-store.ts';
import { linearDelivery } from './linear-surface.ts';
import { tokensToStore } from './linear-tokens.ts';

/** The part of the secret box (PATCHBAY_SECRET_KEY) the install flow uses. */
export type Sealer = {
  seal(plaintext: string): string;
  open(sealed: string): string;
  sign(payload: string, ttlMs: number): string;
  verify(signed: string): string | undefined;
};

export const installScopes = 'read,write,app:assignable,app:mentionable';

const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * The most a Linear webhook body may be. Linear documents no maximum; its events carry one entity
 * (an issue, a comment, an agent activity) and stay far below this.
 */
export const LINEAR_WEBHOOK_MAX_BYTES = 5 * 1024 * 1024;

/**
 * POST /linear/webhooks: the SDK's LinearWebhookClient checks `Linear-Signature` (HMAC-SHA256 of
 * the raw body) and the signed `webhookTimestamp` (within 60 s); anything else gets 401 and
 * creates nothing. A verified delivery is stored in the inbound pipeline under the key of what it
 * means (a redelivery is acknowledged and dropped) and answered at once; the pipeline and the
 * Linear surface do the rest. With OAuth configured,
 * also the install flow: /linear/oauth/start → Linear (actor=app) → /linear/oauth/callback.
 */
export function linearRoutes(deps: {
  webhookSecret: string;
  store: LinearStore;
  inbox: DeliveryInbox;
  log: Logger;
  oauth?: {
    clientId: string;
    clientSecret: string;
    authorizeUrl: string;
    tokenUrl: string;
    apiUrl: string;
    publicUrl: string;
    box: Sealer;
    fetch?: typeof fetch;
  };
  /** LINEAR_ALLOWED_ORGS; unset: every workspace that installs the app is served. */
  allowedOrgs?: readonly string[];
}) {
  const allowed = (organizationId: unknown) =>
    !deps.allowedOrgs || (typeof organizationId === 'string' && deps.allowedOrgs.includes(organizationId));
  const verifier = new LinearWebhookClient(deps.webhookSecret);
  return async function routes(app: FastifyInstance): Promise<void> {
    // Raw bytes for every content type: the signature is over the exact body, and a request that is
    // not Linear's is refused by the signature check (401) rather than by a parser.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: LINEAR_WEBHOOK_MAX_BYTES }, (_req, body, done) =>
      done(null, body),
    );

    // No signature header: refused before a byte of the body is read.
    const signed = async (req: FastifyRequest, reply: FastifyReply) => {
      if (/^[0-9a-f]{64}$/.test(header(req.headers['linear-signature']) ?? '')) return;
      deps.log.warn(
        { delivery: header(req.headers['linear-delivery']) },
        'Linear webhook without a signature refused before its body was read',
      );
      return reply.code(401).header('connection', 'close').send();
    };

    app.post('/linear/webhooks', { onRequest: signed }, async (req, reply) => {
      const body = req.body;
      const signature = header(req.headers['linear-signature']);
      const deliveryId = header(req.headers['linear-delivery']);
      let payload: Record<string, unknown>;
      try {
        if (!Buffer.isBuffer(body) || !signature) throw new Error('no signature');
        payload = verifier.parseData(body, signature) as unknown as Record<string, unknown>;
      } catch {
        // parseData throws for a bad signature and for a missing or stale webhookTimestamp alike.
        deps.log.warn(
          { delivery: deliveryId },
          'Linear webhook refused: bad signature or a webhookTimestamp outside 60 s; check LINEAR_WEBHOOK_SECRET against the app settings and the server clock',
        );
        return reply.code(401).send();
      }
      if (!allowed(payload.organizationId)) {
        // Signed by Linear, from a workspace this Patchbay does not work for: taken, and nothing else.
        deps.log.warn(
          { organizationId: payload.organizationId, delivery: deliveryId },
          'Linear webhook from a workspace not in LINEAR_ALLOWED_ORGS; acknowledged and dropped',
        );
        return reply.code(200).send({ ok: false, ignored: 'workspace not in LINEAR_ALLOWED_ORGS' });
      }
      const delivery = linearDelivery(payload, body!.toString('utf8'), deliveryId, header(req.headers['linear-event']));
      if (!delivery) {
        deps.log.warn(
          { event: payload.type },
          'signed Linear webhook without a delivery id or meaning; acknowledged and dropped',
        );
        return reply.code(200).send({ ok: false, ignored: 'no dedupe key' });
      }
      if ((await deps.inbox.accept(delivery)) === 'duplicate')
        return reply.code(200).send({ ok: true, duplicate: true });
      return reply.code(200).send({ ok: true });
    });

    const oauth = deps.oauth;
    if (!oauth) return;
    const callbackUrl = `${oauth.publicUrl}/linear/oauth/callback`;
    const secure = oauth.publicUrl.startsWith('https:');

    app.get('/linear/oauth/start', async (_req, reply) => {
      const url = new URL(oauth.authorizeUrl);
      url.searchParams.set('client_id', oauth.clientId);
      url.searchParams.set('redirect_uri', callbackUrl);
      url.searchParams.set('response_type', 'code');
      url.searchParams.set('scope', installScopes);
      url.searchParams.set('actor', 'app');
      // Bound to this browser (a random cookie whose hash the state carries): a state fed to
      // someone else's browser, or a callback there, installs nothing.
      const nonce = randomBytes(32).toString('base64url');
      url.searchParams.set(
        'state',
        oauth.box.sign(JSON.stringify({ kind: 'linear-install', browser: digest(nonce) }), INSTALL_TTL_MS),
      );
      reply.header('set-cookie', installCookie(nonce, secure, INSTALL_TTL_MS / 1000));
      return reply.redirect(url.toString(), 302);
    });

    app.get('/linear/oauth/callback', async (req, reply) => {
      const { code, state } = req.query as { code?: string; state?: string };
      const browser = installBrowser(state ? oauth.box.verify(state) : undefined);
      const nonce = readCookie(req.headers.cookie, INSTALL_COOKIE);
      reply.header('set-cookie', installCookie('', secure, 0));
      if (!code || !browser)
        return reply
          .code(400)
          .type('text/plain')
          .send('Install failed: the request is invalid or expired. Start again.');
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
        const response = await (oauth.fetch ?? fetch)(oauth.tokenUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            redirect_uri: callbackUrl,
            client_id: oauth.clientId,
            client_secret: oauth.clientSecret,
          }),
          signal: AbortSignal.timeout(15_000),
        });
        const answer = (await response.json().catch(() => ({}))) as { scope?: string | string[] };
        // The access token (about a day) with its refresh token and expiry, sealed for the table.
        const tokens = response.ok ? tokensToStore(answer, oauth.box, Date.now()) : undefined;
        if (!tokens) throw new Error(`token exchange answered ${response.status}`);
        const client = linearClient(oauth.apiUrl, { accessToken: tokens.accessToken });
        const { organizationId, appUserId } = await installationOf(client, deps.log);
        if (!allowed(organizationId)) {
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
          .send(
            `Patchbay is installed in your Linear workspace. Delegate an issue to it or mention it to start.${note}`,
          );
      } catch (error) {
        // Not the error object: it may carry the code and the client secret.
        deps.log.warn({ reason: String((error as Error).message) }, 'Linear install failed');
        return reply.code(502).type('text/plain').send('Install failed: Linear did not accept the code. Try again.');
      }
    });
  };
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
