import { z } from 'zod';
import { EgressScope } from '../core/egress-allow.ts';
import type { SessionService } from '../sessions/inbound/session-service.ts';
import { actorFrom, Author } from './api-schemas.ts';
import type { ApiServer } from './server.ts';

const AllowBody = z.object({
  host: z.string().trim().min(1).max(300),
  port: z.number().int().min(1).max(65535).optional(),
  scope: EgressScope,
  author: Author.optional(),
});

const RevokeBody = z.object({
  host: z.string().trim().min(1).max(300),
  port: z.number().int().min(1).max(65535).optional(),
  author: Author.optional(),
});

/**
 * Blocked connections decided from the page. `POST /api/sessions/:id/egress-allow`
 * allows a host the session's sandbox was refused, for the session or its repository;
 * `POST /api/repos/:repo/egress-allow/revoke` removes a repository's allowance (the Repo tab), for
 * new connections. The caller holds the API token or the page's sign-in (cross-site requests are
 * refused, as for every state-changing route), so, as for approvals, the operator may decide.
 */
export function registerEgressRoutes(
  app: ApiServer,
  service: Pick<SessionService, 'allowEgress' | 'revokeEgress'>,
): void {
  app.post<{ Params: { id: string } }>('/api/sessions/:id/egress-allow', async (request, reply) => {
    const body = AllowBody.parse(request.body);
    const result = await service.allowEgress(request.params.id, {
      host: body.host,
      port: body.port,
      scope: body.scope,
      actor: actorFrom(body.author),
      surface: 'web',
      vouched: true,
    });
    switch (result.kind) {
      case 'allowed':
        return reply
          .code(201)
          .send({ host: result.host, ...(result.port && { port: result.port }), scope: body.scope });
      case 'refused':
        return reply.code(422).send({ error: 'not_allowable', message: result.message });
      default: {
        const _never: never = result;
        return _never;
      }
    }
  });

  app.post<{ Params: { repo: string } }>('/api/repos/:repo/egress-allow/revoke', async (request, reply) => {
    const body = RevokeBody.parse(request.body);
    const revoked = await service.revokeEgress(request.params.repo, {
      host: body.host,
      port: body.port,
      actor: actorFrom(body.author),
      surface: 'web',
    });
    if (!revoked)
      return reply
        .code(404)
        .send({ error: 'not_found', message: `${request.params.repo} has no allowance for ${body.host}` });
    return reply.code(200).send({ revoked: true });
  });
}
