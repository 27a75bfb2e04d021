import type { Logger } from 'pino';
import type { StoredDelivery } from '../../src/core/delivery-interpreter.ts';
import type { SlackText } from './slack-blocks.ts';
import { messageEventOf, parseSlackPayload, type SlackPayload } from './slack-payloads.ts';
import { postRecorded, type SlackPoster } from './slack-post-once.ts';
import type { SlackStore, SlackThread } from './slack-store.ts';
import { threadOf } from './slack-text.ts';
import type { SlackWeb } from './slack-web.ts';

/** What the interpreter's own messages are posted with. */
export type SayDeps = {
  web: SlackWeb;
  /** Posts with no SDK retries, once per key (postRecorded); `web` when absent. */
  poster?: SlackPoster;
  store: Pick<SlackStore, 'intendPost' | 'recordPost' | 'withdrawPost'>;
  log: Logger;
};

/** The last try failed: say so (once) in the thread the delivery came from. */
export async function tellFailure(deps: SayDeps, delivery: StoredDelivery, reason: string): Promise<void> {
  const thread = threadOfDelivery(parseSlackPayload(delivery.body));
  if (!thread) return;
  const message = { text: `Sorry, I could not process this message: ${reason}` };
  await say(deps, thread, `failed:${delivery.id}`, message);
}

/**
 * Posts one of the interpreter's own messages once under `key` (the message it answers): a
 * retried delivery, or a post whose answer was lost, finds it in the thread instead of posting again.
 */
export function say(deps: SayDeps, thread: SlackThread, key: string, message: SlackText): Promise<string> {
  return postRecorded({ poster: deps.poster ?? deps.web, store: deps.store, log: deps.log }, thread, key, message);
}

function threadOfDelivery(payload: SlackPayload): SlackThread | undefined {
  if (payload.kind === 'event') {
    const message = messageEventOf(payload.body);
    return message && 'event' in message
      ? threadOf(payload.body.team_id ?? message.event.team ?? 'unknown', message.event)
      : undefined;
  }
  if (payload.kind === 'click') {
    const body = payload.body;
    const channel = body.channel?.id ?? body.container?.channel_id;
    const ts = body.message?.thread_ts ?? body.message?.ts ?? body.container?.message_ts;
    if (channel && ts) return { source: 'slack', teamId: body.team?.id ?? 'unknown', channel, threadTs: ts };
  }
  return undefined;
}
