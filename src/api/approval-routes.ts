import { z } from 'zod';
import type { SessionService } from '../sessions/inbound/session-service.ts';
import { actorFrom, Author } from './api-schemas.ts';
import type { ApiServer } from './server.ts';

const ApprovalBody = z.object({
  decision: z.enum(['approved', 'denied']),
  /** Why it was denied; handed to the agent as the call's error. */
  reason: z.string().trim().min(1).max(2000).optional(),
  author: Author.optional(),
});

type ApprovalParams = { Params: { id: string; requestId: string } };

/**
 * POST /api/sessions/:id/approvals/:requestId: a decision on a held command from the web page or
 * an API client. The caller holds the API token or the page's sign-in (and cross-site requests are
 * refused, as for every state-changing route), so the operator may decide any session's requests.
 */
export function registerApprovalRoutes(app: ApiServer, service: Pick<SessionService, 'answerApproval'>): void {
  app.post<ApprovalParams>('/api/sessions/:id/approvals/:requestId', async (request, reply) => {
    const body = ApprovalBody.parse(request.body);
    const result = await service.answerApproval(request.params.id, {
      requestId: request.params.requestId,
      decision: body.decision,
      actor: actorFrom(body.author),
      surface: 'web',
      reason: body.reason,
      vouched: true,
    });
    switch (result.kind) {
      case 'decided':
        return reply.code(202).send({ id: request.params.id, status: result.session.status });
      case 'not-allowed':
        return reply.code(403).send({ error: 'forbidden', message: result.message });
      case 'no-request':
        return reply.code(409).send({
          error: 'no_request',
          message: `session ${request.params.id} has no open approval request ${request.params.requestId}`,
        });
      default: {
        const _never: never = result;
        return _never;
      }
    }
  });
}
