import { SocketModeClient } from '@slack/socket-mode';
import type { Logger } from 'pino';
import type { DeliveryInbox } from '../../src/core/delivery-interpreter.ts';
import { slackLogger } from './slack-logger.ts';
import { slackDelivery } from './slack-routes.ts';

/**
 * Socket Mode: events over a WebSocket opened with the app token, so no public URL is needed. Each
 * envelope is stored in the inbound pipeline and acknowledged once stored, as over HTTP; an
 * envelope that could not be stored is not acknowledged, so Slack sends it again.
 */
export function createSlackSocket(options: { appToken: string; apiUrl: string; inbox: DeliveryInbox; log: Logger }) {
  const { log } = options;
  const client = new SocketModeClient({
    appToken: options.appToken,
    logger: slackLogger(log),
    clientOptions: { slackApiUrl: options.apiUrl },
  });
  client.on(
    'slack_event',
    async ({
      ack,
      body,
      envelope_id: envelopeId,
    }: {
      ack: () => Promise<void>;
      body: unknown;
      envelope_id: string;
    }) => {
      if (typeof body !== 'object' || body === null) {
        log.warn({ envelopeId }, 'a Socket Mode envelope without a payload; acknowledged and dropped');
        return ack();
      }
      try {
        await options.inbox.accept(slackDelivery(body as Record<string, unknown>, JSON.stringify(body), envelopeId));
      } catch (error) {
        log.error(
          { err: error, envelopeId },
          'could not store a Slack envelope; not acknowledged, so Slack sends it again',
        );
        return;
      }
      await ack();
    },
  );
  return {
    start: () => client.start().then(() => undefined),
    stop: () => client.disconnect(),
  };
}
