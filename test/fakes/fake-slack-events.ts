import { createHmac, randomUUID } from 'node:crypto';

/**
 * Slack requests as Slack sends them (wire-formats §1.1–1.5): signed event_callback envelopes with
 * app_mention and message events, block_actions payloads (form-encoded `payload=`), url_verification.
 */
export const TEAM = 'T123ABC456';
export const APP = 'A123ABC456';

export type SignedRequest = { headers: Record<string, string>; body: string };

export function signBody(
  secret: string,
  body: string,
  options: { timestamp?: number; contentType?: string } = {},
): SignedRequest {
  const ts = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const signature = `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;
  return {
    body,
    headers: {
      'content-type': options.contentType ?? 'application/json',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': signature,
    },
  };
}

let counter = 0;
/** A fresh message ts, like Slack's `seconds.micro`. */
export function newTs(): string {
  counter += 1;
  return `${1_700_000_000 + counter}.${String(counter).padStart(6, '0')}`;
}

export function envelope(
  event: Record<string, unknown>,
  eventId = `Ev${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`,
) {
  return {
    token: 'XXYYZZ',
    team_id: TEAM,
    api_app_id: APP,
    event,
    type: 'event_callback',
    event_id: eventId,
    event_time: Math.floor(Date.now() / 1000),
    authorizations: [
      { enterprise_id: null, team_id: TEAM, user_id: 'U0BOT0001', is_bot: true, is_enterprise_install: false },
    ],
    is_ext_shared_channel: false,
    event_context: `4-${randomUUID()}`,
  };
}

export function appMention(input: {
  user: string;
  text: string;
  channel?: string;
  ts?: string;
  threadTs?: string;
  botUserId?: string;
}) {
  const ts = input.ts ?? newTs();
  return {
    client_msg_id: randomUUID(),
    type: 'app_mention',
    text: `<@${input.botUserId ?? 'U0BOT0001'}> ${input.text}`,
    user: input.user,
    ts,
    team: TEAM,
    blocks: [
      {
        type: 'rich_text',
        block_id: 'b1',
        elements: [
          {
            type: 'rich_text_section',
            elements: [
              { type: 'user', user_id: input.botUserId ?? 'U0BOT0001' },
              { type: 'text', text: ` ${input.text}` },
            ],
          },
        ],
      },
    ],
    channel: input.channel ?? 'C123ABC456',
    event_ts: ts,
    ...(input.threadTs && { thread_ts: input.threadTs, parent_user_id: input.user }),
  };
}

export function message(input: {
  user?: string;
  text: string;
  channel?: string;
  channelType?: string;
  ts?: string;
  threadTs?: string;
  botId?: string;
  subtype?: string;
}) {
  const ts = input.ts ?? newTs();
  return {
    type: 'message',
    channel: input.channel ?? 'C123ABC456',
    channel_type: input.channelType ?? 'channel',
    ...(input.user && { user: input.user }),
    text: input.text,
    ts,
    event_ts: ts,
    team: TEAM,
    ...(input.threadTs && { thread_ts: input.threadTs, parent_user_id: 'U0BOT0001' }),
    ...(input.botId
      ? { bot_id: input.botId, subtype: input.subtype ?? 'bot_message' }
      : { client_msg_id: randomUUID() }),
    ...(input.subtype && !input.botId && { subtype: input.subtype }),
  };
}

/** A block_actions payload for a button click on a message the bot posted. */
export function blockAction(input: {
  user: string;
  actionId: string;
  value: string;
  channel?: string;
  messageTs: string;
  threadTs?: string;
}) {
  return {
    type: 'block_actions',
    user: { id: input.user, username: input.user.toLowerCase(), name: input.user.toLowerCase(), team_id: TEAM },
    api_app_id: APP,
    token: 'XXYYZZ',
    container: {
      type: 'message',
      message_ts: input.messageTs,
      channel_id: input.channel ?? 'C123ABC456',
      is_ephemeral: false,
    },
    trigger_id: `${Date.now()}.1.abc`,
    team: { id: TEAM, domain: 'test' },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: input.channel ?? 'C123ABC456', name: 'dev' },
    message: {
      type: 'message',
      user: 'U0BOT0001',
      ts: input.messageTs,
      bot_id: 'B0BOT0001',
      text: '',
      ...(input.threadTs && { thread_ts: input.threadTs }),
    },
    response_url: 'http://127.0.0.1:9/actions/unused',
    actions: [
      {
        action_id: input.actionId,
        block_id: 'actions',
        text: { type: 'plain_text', text: input.value },
        value: input.value,
        type: 'button',
        action_ts: `${Date.now() / 1000}`,
      },
    ],
  };
}

/**
 * Slack's native Stop pressed on a thread's agent session (docs.slack.dev/reference/events/
 * agent_session_stopped): `streaming_message_ts` lists the streams Slack stopped, empty when none.
 */
export function agentSessionStopped(input: {
  user: string;
  threadTs: string;
  channel?: string;
  streamingMessageTs?: string[];
}) {
  return {
    type: 'agent_session_stopped',
    channel: input.channel ?? 'C123ABC456',
    user: input.user,
    thread_ts: input.threadTs,
    streaming_message_ts: input.streamingMessageTs ?? [],
    event_ts: newTs(),
  };
}
