import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { isPatchbayError, type ErrorCode } from '../core/errors.ts';

export type ErrorBody = { error: string; message?: string; issues?: unknown[] };

const statusByCode: Partial<Record<ErrorCode, number>> = {
  not_found: 404,
  invalid_input: 400,
  unauthorized: 401,
  conflict: 409,
};

/**
 * Maps any thrown error to a JSON reply. Coded errors keep their message (they are written to be
 * shown); anything else becomes a generic 500 and is logged with its stack, which never leaves
 * the server.
 */
export function errorReply(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof ZodError) {
    const message = error.issues
      .map((issue) => (issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
      .join('; ');
    return reply.code(400).send({ error: 'invalid_input', message, issues: error.issues } satisfies ErrorBody);
  }
  if (isPatchbayError(error)) {
    const status = statusByCode[error.code];
    if (status) return reply.code(status).send({ error: error.code, message: error.message } satisfies ErrorBody);
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ error: error.code, message: 'internal error' } satisfies ErrorBody);
  }
  // Fastify's own client errors (malformed JSON, wrong content type, body too large) carry a 4xx.
  const statusCode = (error as FastifyError | undefined)?.statusCode;
  if (statusCode && statusCode >= 400 && statusCode < 500) {
    return reply.code(statusCode).send({ error: 'bad_request', message: (error as Error).message } satisfies ErrorBody);
  }
  request.log.error({ err: error }, 'request failed');
  return reply.code(500).send({ error: 'internal', message: 'internal error' } satisfies ErrorBody);
}
