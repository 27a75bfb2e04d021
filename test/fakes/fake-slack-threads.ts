import type { SlackMessage } from './fake-slack-api.ts';
import { pageSize } from './slack-tiers.ts';

/** A page asked with a `limit` over the method's maximum: Slack cut it (see slack-tiers.ts `pageSize`). */
export type ClampedRead = { method: string; asked: number; given: number };

type Answer = { body: Record<string, unknown>; clamped?: ClampedRead };

/**
 * conversations.replies: the thread's parent first, then its replies, oldest first, in pages of
 * `limit` (cut to the method's maximum) with Slack's cursor pagination (`has_more`,
 * `response_metadata.next_cursor`, `cursor` to go on; a cursor Slack never gave is
 * `invalid_cursor`). Metadata only when asked for (include_all_metadata). The fake knows a parent
 * only when it was posted here (a mention arrives as an event), so a thread may come back without it.
 */
export function threadReplies(
  messages: readonly SlackMessage[],
  args: Record<string, unknown>,
  bot: { botId: string },
  marketplace: boolean,
): Answer {
  const ts = String(args.ts);
  const thread = messages.filter((m) => m.channel === args.channel && (m.ts === ts || m.threadTs === ts));
  return page('conversations.replies', sortBy(thread, 1), args, bot, marketplace);
}

/** conversations.history: the channel's messages (replies left in their threads), newest first, paged as above. */
export function channelHistory(
  messages: readonly SlackMessage[],
  args: Record<string, unknown>,
  bot: { botId: string },
  marketplace: boolean,
): Answer {
  const top = messages.filter((m) => m.channel === args.channel && (!m.threadTs || m.threadTs === m.ts));
  return page('conversations.history', sortBy(top, -1), args, bot, marketplace);
}

function page(
  method: string,
  list: SlackMessage[],
  args: Record<string, unknown>,
  bot: { botId: string },
  marketplace: boolean,
): Answer {
  const asked = args.limit === undefined ? undefined : Number(args.limit);
  const { given, clamped } = pageSize(method, asked, marketplace);
  let start = 0;
  if (typeof args.cursor === 'string' && args.cursor !== '') {
    const from = /^next_ts:(\d+\.\d+)$/.exec(Buffer.from(args.cursor, 'base64').toString('utf8'))?.[1];
    start = from === undefined ? -1 : list.findIndex((m) => m.ts === from);
    if (start < 0) return { body: { ok: false, error: 'invalid_cursor' } };
  }
  const withMetadata = args.include_all_metadata === true || args.include_all_metadata === 'true';
  const shown = list.slice(start, start + given);
  const next = list[start + given];
  const body = {
    ok: true,
    messages: shown.map((m) => ({
      type: 'message',
      ts: m.ts,
      text: m.text,
      ...(m.user ? { user: m.user } : { bot_id: bot.botId }),
      ...(m.threadTs && { thread_ts: m.threadTs }),
      ...(withMetadata && m.metadata && { metadata: m.metadata }),
    })),
    has_more: next !== undefined,
    response_metadata: { next_cursor: next ? Buffer.from(`next_ts:${next.ts}`).toString('base64') : '' },
  };
  return { body, ...(clamped && { clamped: { method, asked: asked!, given } }) };
}

function sortBy(list: SlackMessage[], order: 1 | -1): SlackMessage[] {
  return [...list].sort((a, b) => order * (Number(a.ts) - Number(b.ts)));
}
