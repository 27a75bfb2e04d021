import { Webhooks } from '@octokit/webhooks';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { DeliveryInbox } from '../../src/core/delivery-interpreter.ts';
import { header, keepRawBodies, rawBody, refuseBeforeBody } from '../raw-body-routes.ts';
import type { GitHubClient } from './github-client.ts';
import type { GitHubStore } from './github-store.ts';
import { githubDedupeKey, githubOrderKey } from './webhook-keys.ts';
import { registerOAuthRoutes, type OAuthOptions } from './github-oauth-routes.ts';

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

/** A webhook with no signature header at all is refused before its body is read. */
function refuseUnsigned(log: Logger) {
  return refuseBeforeBody(
    (req) => (/^sha256=[0-9a-f]{64}$/.test(header(req.headers['x-hub-signature-256']) ?? '') ? undefined : 'missing'),
    (req) =>
      log.warn(
        { delivery: header(req.headers['x-github-delivery']) },
        'GitHub webhook without a signature refused before its body was read',
      ),
  );
}

/**
 * POST /github/webhooks (when a webhook secret is set: in polling mode there may be none): verifies the signature on the raw body (401 and nothing else when it is
 * wrong), stores the delivery in the inbound pipeline (a delivery whose meaning was stored before,
 * a redelivery or a replay, is acknowledged and dropped), and answers at once; the pipeline and the
 * GitHub interpreter do the rest. Also the sign-in routes when OAuth is configured.
 */
export function githubRoutes(deps: {
  webhookSecret: string | undefined;
  store: GitHubStore;
  inbox: DeliveryInbox;
  client: GitHubClient;
  oauth?: OAuthOptions;
  log: Logger;
}) {
  const { webhookSecret } = deps;
  return async function routes(app: FastifyInstance): Promise<void> {
    if (webhookSecret) webhookRoute(app, { ...deps, webhookSecret });
    if (deps.oauth)
      registerOAuthRoutes(app, { oauth: deps.oauth, client: deps.client, store: deps.store, log: deps.log });
  };
}

function webhookRoute(app: FastifyInstance, deps: { webhookSecret: string; inbox: DeliveryInbox; log: Logger }): void {
  const verify = signatureVerifier(deps.webhookSecret);
  keepRawBodies(app, GITHUB_WEBHOOK_MAX_BYTES);
  const signed = refuseUnsigned(deps.log);
  app.post('/github/webhooks', { onRequest: signed }, async (req, reply) => {
    const body = rawBody(req);
    if (!(await verify(body, header(req.headers['x-hub-signature-256'])))) {
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
}
