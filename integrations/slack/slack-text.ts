import type { SlackMessageEvent } from './slack-payloads.ts';
import type { SlackThread } from './slack-store.ts';

/** What a message or mention means to Patchbay. */
export type MessageKind = 'request' | 'thread-reply' | 'ignore';

// Subtypes that are still a person writing; every other subtype (edits, joins, bots) is ignored.
const PERSON_SUBTYPES = new Set([undefined, 'thread_broadcast', 'file_share']);

/**
 * Sorts an event: a mention, or a top-level DM, is a request; a reply in a thread (thread_ts set
 * and not the message's own ts) is a reply; everything else, including anything from a bot, is ignored.
 */
export function classifyEvent(event: SlackMessageEvent): MessageKind {
  if (event.bot_id || !event.user || !PERSON_SUBTYPES.has(event.subtype)) return 'ignore';
  const isReply = Boolean(event.thread_ts && event.thread_ts !== event.ts);
  if (event.type === 'app_mention') return isReply ? 'thread-reply' : 'request';
  if (event.type !== 'message') return 'ignore';
  if (isReply) return 'thread-reply';
  return event.channel_type === 'im' ? 'request' : 'ignore';
}

/** The thread a message belongs to: its parent's ts, or its own when it starts one. */
export function threadOf(teamId: string, event: Pick<SlackMessageEvent, 'channel' | 'ts' | 'thread_ts'>): SlackThread {
  return { source: 'slack', teamId, channel: event.channel, threadTs: event.thread_ts ?? event.ts };
}

/** The message text without the bot's mention, with Slack's three escapes undone. */
export function cleanText(text: string | undefined, botUserId?: string): string {
  let out = text ?? '';
  if (botUserId) out = out.replaceAll(`<@${botUserId}>`, ' ');
  return out
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/[ \t]+/g, ' ')
    .trim();
}

/** Link markup removed, for text handed to the model: `<url|label>` → url, `<url>` → url. */
export function plainText(text: string): string {
  return text.replace(/<((?:https?|mailto):[^>|]+)\|[^>]*>/g, '$1').replace(/<((?:https?|mailto):[^>]+)>/g, '$1');
}

export function isStopCommand(text: string): boolean {
  return /^(stop|cancel|abort)[.!]*$/i.test(text.trim());
}

/** Slack's mrkdwn control characters, escaped for text we did not write. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
