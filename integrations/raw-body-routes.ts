import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * What the three webhook receivers share. A vendor signs the exact bytes it sent, so in the
 * receiver's Fastify scope every body stays raw, whatever its content type: a request that is not
 * the vendor's meets the signature check (401), not a parser (415), and a body past `bodyLimit` is
 * refused while it streams (413), never buffered whole.
 */
export function keepRawBodies(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => done(null, body));
}

/** The raw body `keepRawBodies` kept, or an empty one when the request had none. */
export function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
}

/** A header's first value (Node gives repeated headers as an array). */
export function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * An onRequest hook: a request whose signature header is missing or malformed is refused (401, the
 * connection closed) before a byte of its body is read, since checking the HMAC needs all of it.
 * `problem` returns why the request's headers cannot be signed, or nothing when they may be.
 */
export function refuseBeforeBody(
  problem: (request: FastifyRequest) => string | undefined,
  onRefused: (request: FastifyRequest, reason: string) => void,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const reason = problem(request);
    if (reason === undefined) return;
    onRefused(request, reason);
    return reply.code(401).header('connection', 'close').send({ error: 'invalid_signature', reason });
  };
}
