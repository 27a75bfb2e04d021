import { LinearWebhookClient } from '@linear/sdk/webhooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { DeliveryInbox } from '../../src/core/delivery-interpreter.ts';
import { header, keepRawBodies, rawBody, refuseBeforeBody } from '../raw-body-routes.ts';
import type { LinearStore } from './linear-store.ts';
import { linearDelivery } from './linear-interpreter.ts';
import { type InstallSettings, installRoutes, orgAllowed } from './linear-install.ts';

/**
 * The most a Linear webhook body may be. Linear documents no maximum; its events carry one entity
 * (an issue, a comment, an agent activity) and stay far below this.
 */
export const LINEAR_WEBHOOK_MAX_BYTES = 5 * 1024 * 1024;

/** What the Linear receiver needs: the webhook secret, where deliveries go, and the install flow's settings. */
export type LinearRoutesDeps = {
  webhookSecret: string;
  store: LinearStore;
  inbox: DeliveryInbox;
  log: Logger;
  oauth?: InstallSettings;
  /** LINEAR_ALLOWED_ORGS; unset: every workspace that installs the app is served. */
  allowedOrgs?: readonly string[];
};

/**
 * POST /linear/webhooks: the SDK's LinearWebhookClient checks `Linear-Signature` (HMAC-SHA256 of
 * the raw body) and the signed `webhookTimestamp` (within 60 s); anything else gets 401 and
 * creates nothing. A verified delivery is stored in the inbound pipeline under the key of what it
 * means (a redelivery is acknowledged and dropped) and answered at once; the pipeline and the
 * Linear interpreter do the rest. With OAuth configured, also the install flow (linear-install.ts):
 * /linear/oauth/start → Linear (actor=app) → /linear/oauth/callback.
 */
export function linearRoutes(deps: LinearRoutesDeps) {
  const verifier = new LinearWebhookClient(deps.webhookSecret);
  return async function routes(app: FastifyInstance): Promise<void> {
    keepRawBodies(app, LINEAR_WEBHOOK_MAX_BYTES);
    const signed = refuseBeforeBody(
      (req) => (/^[0-9a-f]{64}$/.test(header(req.headers['linear-signature']) ?? '') ? undefined : 'missing'),
      (req) =>
        deps.log.warn(
          { delivery: header(req.headers['linear-delivery']) },
          'Linear webhook without a signature refused before its body was read',
        ),
    );
    app.post('/linear/webhooks', { onRequest: signed }, (req, reply) => receiveWebhook(deps, verifier, req, reply));
    if (deps.oauth)
      installRoutes(app, { ...deps.oauth, store: deps.store, log: deps.log, allowedOrgs: deps.allowedOrgs });
  };
}

/** A signed webhook: verified, checked against LINEAR_ALLOWED_ORGS, keyed and stored before the 200. */
async function receiveWebhook(
  deps: LinearRoutesDeps,
  verifier: LinearWebhookClient,
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const body = rawBody(req);
  const signature = header(req.headers['linear-signature']);
  const deliveryId = header(req.headers['linear-delivery']);
  let payload: Record<string, unknown>;
  try {
    if (!signature) throw new Error('no signature');
    payload = verifier.parseData(body, signature) as unknown as Record<string, unknown>;
  } catch {
    // parseData throws for a bad signature and for a missing or stale webhookTimestamp alike.
    deps.log.warn(
      { delivery: deliveryId },
      'Linear webhook refused: bad signature or a webhookTimestamp outside 60 s; check LINEAR_WEBHOOK_SECRET against the app settings and the server clock',
    );
    return reply.code(401).send();
  }
  if (!orgAllowed(deps.allowedOrgs, payload.organizationId)) {
    // Signed by Linear, from a workspace this Patchbay does not work for: taken, and nothing else.
    deps.log.warn(
      { organizationId: payload.organizationId, delivery: deliveryId },
      'Linear webhook from a workspace not in LINEAR_ALLOWED_ORGS; acknowledged and dropped',
    );
    return reply.code(200).send({ ok: false, ignored: 'workspace not in LINEAR_ALLOWED_ORGS' });
  }
  const delivery = linearDelivery(
    payload,
    (body as Buffer).toString('utf8'),
    deliveryId,
    header(req.headers['linear-event']),
  );
  if (!delivery) {
    deps.log.warn(
      { event: payload.type },
      'signed Linear webhook without a delivery id or meaning; acknowledged and dropped',
    );
    return reply.code(200).send({ ok: false, ignored: 'no dedupe key' });
  }
  if ((await deps.inbox.accept(delivery)) === 'duplicate') return reply.code(200).send({ ok: true, duplicate: true });
  return reply.code(200).send({ ok: true });
}
