import type { App, Receiver, ReceiverEvent } from '@slack/bolt';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { verifySlackSignature } from './slack-signature.ts';

export type FastifyReceiver = Receiver & {
  /** Registers POST /slack/events (events and interactivity) in the caller's Fastify scope. */
  routes(app: FastifyInstance): Promise<void>;
};

/**
 * A Bolt receiver that lives in Patchbay's one Fastify server: it verifies Slack's signature on
 * the raw body, answers url_verification itself, hands everything else to `app.processEvent`, and
 * replies as soon as Bolt acks (before listeners finish). A request nobody acks within
 * `ackTimeoutMs` still gets a 200, so Slack does not retry work that is already under way.
 */
export function createFastifyReceiver(options: {
  signingSecret: string;
  log: Logger;
  path?: string;
  nowSeconds?: () => number;
  ackTimeoutMs?: number;
}): FastifyReceiver {
  const { log } = options;
  const nowSeconds = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  const ackTimeoutMs = options.ackTimeoutMs ?? 2_500;
  let bolt: App | undefined;
  let mismatches = 0;

  return {
    init(app: App) {
      bolt = app;
    },
    async start() {},
    async stop() {},

    async routes(fastify: FastifyInstance) {
      // Raw strings, in this scope only: the signature covers the exact bytes Slack sent. Any content
      // type, so a request that is not Slack's meets the signature check (401), not a 415.
      fastify.removeAllContentTypeParsers();
      fastify.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 4 * 1024 * 1024 }, (_req, body, done) => done(null, body));
      fastify.post(options.path ?? '/slack/events', { config: { public: true } }, async (request, reply) => {
        const rawBody = typeof request.body === 'string' ? request.body : '';
        const check = verifySlackSignature({
          signingSecret: options.signingSecret,
          timestamp: header(request.headers['x-slack-request-timestamp']),
          signature: header(request.headers['x-slack-signature']),
          rawBody,
          nowSeconds: nowSeconds(),
        });
        if (!check.ok) {
          if (check.reason === 'mismatch' && mismatches++ % 100 === 0) {
            log.warn('a Slack request failed signature verification: check SLACK_SIGNING_SECRET against the app\'s Basic Information page');
          }
          return reply.code(401).send({ error: 'invalid_signature', reason: check.reason });
        }
        const body = parseBody(rawBody, request.headers['content-type'] ?? '');
        if (!body) {
          // Signed by Slack yet unreadable: a retry would carry the same bytes, so take it and say so.
          log.warn(
            { contentType: request.headers['content-type'], bytes: rawBody.length, retryNum: header(request.headers['x-slack-retry-num']) },
            'a signed Slack request body could not be read; acknowledged and dropped',
          );
          return reply.code(200).send();
        }
        if (body.ssl_check) return reply.code(200).send();
        if (body.type === 'url_verification') return reply.code(200).send({ challenge: body.challenge });
        if (!bolt) return reply.code(503).header('retry-after', '5').send({ error: 'not_ready' });

        const retryNum = Number(header(request.headers['x-slack-retry-num']) ?? NaN);
        const retryReason = header(request.headers['x-slack-retry-reason']);
        const acked = new Promise<unknown>((resolve) => {
          const event: ReceiverEvent = {
            body,
            ...(Number.isInteger(retryNum) && { retryNum }),
            ...(retryReason && { retryReason }),
            ack: async (response?: unknown) => resolve(response ?? ''),
          };
          const timer = setTimeout(() => resolve(''), ackTimeoutMs);
          bolt!
            .processEvent(event)
            .catch((error: unknown) => log.error({ err: error }, 'Slack event processing failed'))
            .finally(() => {
              clearTimeout(timer);
              resolve('');
            });
        });
        const response = await acked;
        if (typeof response === 'string') return reply.code(200).type('text/plain').send(response);
        return reply.code(200).send(response);
      });
    },
  };
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Events are JSON; interactivity is a form with the JSON in `payload`; slash commands are plain forms. */
function parseBody(raw: string, contentType: string): Record<string, unknown> | undefined {
  try {
    if (contentType.startsWith('application/x-www-form-urlencoded')) {
      const form = new URLSearchParams(raw);
      const payload = form.get('payload');
      return payload ? (JSON.parse(payload) as Record<string, unknown>) : Object.fromEntries(form);
    }
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
