import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApiServer, RouteConfig } from './server.ts';

/** The part of the engine relay the route needs: serve one request below its base URL. */
export type RelayHandler = { handle(req: IncomingMessage, res: ServerResponse, path: string): void };

export const ENGINE_RELAY_PREFIX = '/engine-relay';

/**
 * `/engine-relay/…` on Patchbay's HTTP server: the engine relay of this process, for sandboxes that
 * reach Patchbay over the network (Modal) rather than its loopback. It is not under /api: the run's
 * relay token is its only credential, and the relay refuses every request without an open run's
 * token, past the run's budget or after a stop, and outside the provider's /v1/ API, as on loopback.
 * The body is not parsed here: the request is handed to the relay before Fastify reads it.
 */
export function registerEngineRelayRoute(app: ApiServer, relay: RelayHandler): void {
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: `${ENGINE_RELAY_PREFIX}/*`,
    config: { public: true } satisfies RouteConfig,
    onRequest: async (request, reply) => {
      reply.hijack();
      relay.handle(request.raw, reply.raw, request.raw.url!.slice(ENGINE_RELAY_PREFIX.length));
    },
    handler: async () => undefined,
  });
}
