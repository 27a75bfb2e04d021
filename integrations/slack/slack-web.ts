import type { WebClient } from '@slack/web-api';
import type { SlackText } from './slack-blocks.ts';
import type { SlackThread } from './slack-store.ts';

/** The part of Slack's Web API client the integration calls. */
export type SlackWeb = Pick<WebClient, 'chat' | 'reactions' | 'users' | 'conversations' | 'agents' | 'assistant'>;

/** Posts a message in a thread, links not unfurled. */
export async function postInThread(web: SlackWeb, thread: SlackThread, message: SlackText): Promise<void> {
  await web.chat.postMessage({
    channel: thread.channel,
    thread_ts: thread.threadTs,
    text: message.text,
    ...(message.blocks && { blocks: message.blocks as never }),
    unfurl_links: false,
  });
}
