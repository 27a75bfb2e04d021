import { App, LogLevel, SocketModeReceiver, type Logger as BoltLogger, type Receiver } from '@slack/bolt';
import type { RetryOptions } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SlackInbound } from './slack-inbound.ts';
import type { SlackMessageEvent } from './slack-normalize.ts';

export type SlackAppOptions = {
  botToken: string;
  botId: string;
  botUserId: string;
  apiUrl: string;
  retryConfig: RetryOptions;
  receiver: Receiver;
  inbound: SlackInbound;
  /** Records an event id; false for a retry of an event already taken. */
  recordDelivery(eventId: string): Promise<boolean>;
  log: Logger;
};

/**
 * The Bolt app: global middleware that drops Slack's retries of events already taken (by event_id,
 * after Bolt has acked), and listeners that pass mentions, messages and button clicks to the inbound
 * handler. Bolt acks events before middleware runs, so nothing here delays the ack.
 */
export function createSlackApp(options: SlackAppOptions): App {
  const { log, inbound } = options;
  const app = new App({
    token: options.botToken,
    botId: options.botId,
    botUserId: options.botUserId,
    tokenVerificationEnabled: false,
    receiver: options.receiver,
    logger: boltLogger(log),
    ignoreSelf: true,
    clientOptions: { slackApiUrl: options.apiUrl, retryConfig: options.retryConfig },
  });

  app.use(async ({ body, next }) => {
    const eventId = (body as { event_id?: unknown }).event_id;
    if (typeof eventId === 'string' && !(await options.recordDelivery(eventId))) {
      log.info({ eventId }, 'Slack retry of an event already taken; ignored');
      return;
    }
    await next();
  });

  const teamOf = (body: { team_id?: string }, event: { team?: string }) => body.team_id ?? event.team ?? 'unknown';
  app.event('app_mention', async ({ event, body }) => inbound.onMessage(teamOf(body, event), event as unknown as SlackMessageEvent));
  app.event('message', async ({ event, body }) => inbound.onMessage(teamOf(body, event as { team?: string }), event as unknown as SlackMessageEvent));
  app.action(/^patchbay_/, async ({ ack, body, action }) => {
    await ack();
    if (body.type !== 'block_actions' || action.type !== 'button' || !('action_id' in action)) return;
    const message = body.message as { ts?: string; thread_ts?: string } | undefined;
    const channel = body.channel?.id ?? body.container?.channel_id;
    const messageTs = message?.ts ?? body.container?.message_ts;
    if (!channel || !messageTs) return;
    await inbound.onAction({
      teamId: body.team?.id ?? body.user.team_id ?? 'unknown',
      channel,
      messageTs,
      ...(message?.thread_ts && { threadTs: message.thread_ts }),
      user: body.user.id,
      actionId: action.action_id,
      value: action.value ?? '',
      actionTs: action.action_ts,
    });
  });
  app.error(async (error) => {
    log.error({ err: error }, 'Slack listener failed');
  });
  return app;
}

/** Socket Mode: events over a WebSocket opened with the app token, so no public URL is needed. */
export function createSocketReceiver(options: { appToken: string; apiUrl: string; log: Logger }): SocketModeReceiver {
  const logger = boltLogger(options.log);
  return new SocketModeReceiver({
    appToken: options.appToken,
    logger,
    // Bolt builds this receiver's WebClient from installerOptions, not from App's clientOptions.
    installerOptions: { clientOptions: { slackApiUrl: options.apiUrl } },
  });
}

/** Slack's SDK logger interface over pino (the SDKs would otherwise write to the console). */
export function boltLogger(log: Logger): BoltLogger {
  const child = log.child({ component: 'bolt' });
  let level = LogLevel.INFO;
  const join = (msg: unknown[]) => msg.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))).join(' ');
  return {
    debug: (...msg) => child.debug(join(msg)),
    info: (...msg) => child.info(join(msg)),
    warn: (...msg) => child.warn(join(msg)),
    error: (...msg) => child.error(join(msg)),
    setLevel: (l) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
