import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { DeliveryInbox, ReceivedDelivery } from '../../src/core/delivery-interpreter.ts';
import { BlockActions, EventCallback, messageEventOf, stopEventOf } from './slack-payloads.ts';
import { MAX_SKEW_SECONDS, verifySlackSignature } from './slack-signature.ts';
import { header, keepRawBodies, rawBody, refuseBeforeBody } from '../raw-body-routes.ts';

/**
 * What a Slack payload means, for dedupe: a person's message (channel and ts, so the `message` and
 * `app_mention` events Slack sends for one message count once), another event by its event_id, a
 * button click by its message, time and user; anything else by the body's hash. Slack's retries
 * and a signed body replayed within the signature window have the same key.
 */
export function slackDelivery(body: Record<string, unknown>, raw: string, deliveryId?: string): ReceivedDelivery {
  const kind = typeof body.type === 'string' ? body.type : 'unknown';
  const base = { source: 'slack', kind, body: raw, ...(deliveryId && { deliveryId }) };
  const envelope = kind === 'event_callback' ? EventCallback.safeParse(body) : undefined;
  if (envelope?.success) {
    const message = messageEventOf(envelope.data);
    if (message && 'event' in message) {
      // One thread's messages in the order they came (a request, then "stop").
      const { channel, ts, thread_ts: threadTs = ts } = message.event;
      return { ...base, dedupeKey: `msg:${channel}:${ts}`, orderKey: `thread:${channel}:${threadTs}` };
    }
    // A native Stop comes after the request in its thread (it may be pressed before the run exists).
    const stop = stopEventOf(envelope.data);
    const after = stop && 'event' in stop ? { orderKey: `thread:${stop.event.channel}:${stop.event.thread_ts}` } : {};
    if (envelope.data.event_id) return { ...base, ...after, dedupeKey: `event:${envelope.data.event_id}` };
  }
  const click = kind === 'block_actions' ? BlockActions.safeParse(body) : undefined;
  if (click?.success) {
    const { container, message, user } = click.data;
    const action = click.data.actions?.[0];
    const channel = click.data.channel?.id ?? container?.channel_id;
    const threadTs = message?.thread_ts ?? message?.ts ?? container?.message_ts;
    const orderKey = channel && threadTs ? { orderKey: `thread:${channel}:${threadTs}` } : {};
    if (container?.message_ts && action?.action_ts)
      return { ...base, ...orderKey, dedupeKey: `action:${container.message_ts}:${action.action_ts}:${user.id}` };
  }
  return { ...base, dedupeKey: `body:${createHash('sha256').update(raw).digest('hex')}` };
}

/**
 * The most a Slack request body may be. Slack documents no maximum for Events API or
 * interactivity requests; this is Bolt's own receiver limit, far above any real event.
 */
export const SLACK_REQUEST_MAX_BYTES = 4 * 1024 * 1024;

/**
 * POST /slack/events (events and interactivity) in Patchbay's one Fastify server: verifies Slack's
 * signature on the raw body (401 otherwise), answers url_verification and ssl_check itself, stores
 * everything else in the inbound pipeline, and acknowledges once it is stored. The work happens
 * after the ack, from the pipeline's queue (see SlackInterpreter), so a crash after the ack loses nothing.
 */
export function slackRoutes(options: {
  signingSecret: string;
  inbox: DeliveryInbox;
  log: Logger;
  path?: string;
  nowSeconds?: () => number;
}) {
  const { log, inbox } = options;
  const nowSeconds = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  let mismatches = 0;

  return async function routes(fastify: FastifyInstance): Promise<void> {
    keepRawBodies(fastify, SLACK_REQUEST_MAX_BYTES);
    // Missing or stale signing headers are refused before the body is read.
    const signedAndFresh = refuseBeforeBody(
      (request) => {
        const timestamp = header(request.headers['x-slack-request-timestamp']);
        const signature = header(request.headers['x-slack-signature']);
        if (!timestamp || !/^\d+$/.test(timestamp) || !/^v0=[0-9a-f]{64}$/.test(signature ?? '')) return 'missing';
        if (Math.abs(nowSeconds() - Number(timestamp)) > MAX_SKEW_SECONDS) return 'stale';
        return undefined;
      },
      () => undefined,
    );
    fastify.post(
      options.path ?? '/slack/events',
      { config: { public: true }, onRequest: signedAndFresh },
      async (request, reply) => {
        const text = rawBody(request).toString('utf8');
        const check = verifySlackSignature({
          signingSecret: options.signingSecret,
          timestamp: header(request.headers['x-slack-request-timestamp']),
          signature: header(request.headers['x-slack-signature']),
          rawBody: text,
          nowSeconds: nowSeconds(),
        });
        if (!check.ok) {
          if (check.reason === 'mismatch' && mismatches++ % 100 === 0) {
            log.warn(
              "a Slack request failed signature verification: check SLACK_SIGNING_SECRET against the app's Basic Information page",
            );
          }
          return reply.code(401).send({ error: 'invalid_signature', reason: check.reason });
        }
        const parsed = parseBody(text, request.headers['content-type'] ?? '');
        if (!parsed) {
          // Signed by Slack yet unreadable: a retry would carry the same bytes, so take it and say so.
          log.warn(
            {
              contentType: request.headers['content-type'],
              bytes: text.length,
              retryNum: header(request.headers['x-slack-retry-num']),
            },
            'a signed Slack request body could not be read; acknowledged and dropped',
          );
          return reply.code(200).send();
        }
        const { body, json } = parsed;
        if (body.ssl_check) return reply.code(200).send();
        if (body.type === 'url_verification') return reply.code(200).send({ challenge: body.challenge });
        // Stored as the JSON payload (interactivity's form field unwrapped), which is what the interpreter reads.
        await inbox.accept(slackDelivery(body, json));
        return reply.code(200).send();
      },
    );
  };
}

/** Events are JSON; interactivity is a form with the JSON in `payload`. */
function parseBody(raw: string, contentType: string): { body: Record<string, unknown>; json: string } | undefined {
  try {
    const json = contentType.startsWith('application/x-www-form-urlencoded')
      ? new URLSearchParams(raw).get('payload')
      : raw;
    if (!json) return undefined;
    const parsed: unknown = JSON.parse(json);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? { body: parsed as Record<string, unknown>, json }
      : undefined;
  } catch {
    return undefined;
  }
}
