import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { SlackText } from './slack-blocks.ts';
import type { SlackStore, SlackThread } from './slack-store.ts';

/** The part of a Web API client that posts once: no SDK retries; 429s waited out per method (TieredWebClient). */
export type SlackPoster = Pick<WebClient, 'chat' | 'conversations'>;

/** What Patchbay's keyed posts carry in Slack's message metadata, so the thread shows which post is which. */
export const postMetadataType = 'patchbay_post';

const maxTries = 3;

/**
 * Messages asked for per look at a thread. For an app "commercially distributed outside of the
 * Marketplace", as a Patchbay app installed in other workspaces is, conversations.replies "is rate
 * limited to 1 request per minute. The maximum and default values for the limit parameter have both
 * been reduced to 15 objects" (docs.slack.dev/reference/methods/conversations.replies, since
 * 2025-05-29; internal customer-built apps keep Tier 3): a longer thread is read page by page,
 * each page a call of that one a minute. 15 serves both rules.
 */
const threadPageSize = 15;

/**
 * Posts `message` under `key` in the thread exactly once. A post whose answer was lost (the
 * connection dropped after Slack accepted it, a timeout, a 5xx) or that an earlier process may have
 * made before it crashed (`inDoubt`) is first looked for in the thread by its metadata; only a post
 * that is not there is made (again). A look Slack rate-limits (one a minute outside the Marketplace)
 * is waited for, under conversations.replies alone; a look that still cannot be made throws, and
 * the post is not made blind: its intent stays in doubt, so the caller's next try looks again. A 429
 * on the post is waited out by the poster under its own channel, so no other Slack call waits with
 * it. Slack's own refusals (ok: false), and 429s past the poster's waits, are final: the post was
 * not made, and `inDoubt` says whether anything of it may still be in the thread (false: Slack's
 * last answer was a clear no).
 */
async function postOnce(
  deps: { poster: SlackPoster; log: Logger; sleep?: (ms: number) => Promise<void> },
  thread: SlackThread,
  key: string,
  message: SlackText,
  inDoubt: boolean,
): Promise<{ ts: string } | { error: unknown; inDoubt: boolean }> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let doubt = inDoubt;
  for (let attempt = 1; ; attempt += 1) {
    if (doubt) {
      const found = await findPost(deps.poster, thread, key);
      if (found) {
        deps.log.info({ key, ts: found }, 'a Slack post whose answer was lost is in the thread; not posting it again');
        return { ts: found };
      }
    }
    try {
      const result = await deps.poster.chat.postMessage({
        channel: thread.channel,
        thread_ts: thread.threadTs,
        text: message.text,
        ...(message.blocks && { blocks: message.blocks as never }),
        unfurl_links: false,
        metadata: { event_type: postMetadataType, event_payload: { key } },
      });
      return { ts: result.ts! };
    } catch (error) {
      const fault = classify(error);
      if (fault.kind === 'not-posted' || attempt >= maxTries) return { error, inDoubt: fault.kind === 'ambiguous' };
      deps.log.warn({ key, attempt, err: error }, 'a Slack post failed; looking in the thread before posting again');
      doubt = true;
      await sleep(fault.waitMs);
    }
  }
}

/**
 * Posts `message` under `key` once, its intent recorded before and its ts after (slack_posts): a
 * repeat of the same key (a retried delivery, a crash between posting and recording) looks for it
 * in the thread instead of posting again. A post Slack clearly did not make (it refused it, or its
 * 429s outlasted the tries, and no earlier try of it is in doubt) withdraws its intent before its
 * error is thrown: the next try posts without a look, which outside Slack's Marketplace would cost
 * a minute per 15 messages of the thread.
 */
export async function postRecorded(
  deps: { poster: SlackPoster; store: Pick<SlackStore, 'intendPost' | 'recordPost' | 'withdrawPost'>; log: Logger },
  thread: SlackThread,
  key: string,
  message: SlackText,
): Promise<string> {
  const inDoubt = await deps.store.intendPost(thread, key);
  const outcome = await postOnce(deps, thread, key, message, inDoubt);
  if ('error' in outcome) {
    if (!outcome.inDoubt) await deps.store.withdrawPost(thread, key);
    throw outcome.error;
  }
  await deps.store.recordPost(thread, key, outcome.ts);
  return outcome.ts;
}

/** A post's ts when the thread has the bot's message carrying `key`: every page read, oldest first. */
async function findPost(poster: SlackPoster, thread: SlackThread, key: string): Promise<string | undefined> {
  let cursor: string | undefined;
  do {
    const page = await poster.conversations.replies({
      channel: thread.channel,
      ts: thread.threadTs,
      include_all_metadata: true,
      limit: threadPageSize,
      ...(cursor && { cursor }),
    });
    const hit = (page.messages ?? []).find(
      (m) =>
        m.metadata?.event_type === postMetadataType &&
        (m.metadata.event_payload as Record<string, unknown> | undefined)?.key === key,
    );
    if (hit?.ts) return hit.ts;
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor);
  return undefined;
}

type Fault = { kind: 'not-posted' } | { kind: 'ambiguous'; waitMs: number };

/**
 * What a failed post means: Slack answered ok: false, or still 429 after the poster waited out its
 * Retry-Afters (TieredWebClient): not posted, and final; anything else (no answer, a 5xx) may
 * have been posted.
 */
function classify(error: unknown): Fault {
  const { code } = error as { code?: string };
  if (code === 'slack_webapi_platform_error' || code === 'slack_webapi_rate_limited_error')
    return { kind: 'not-posted' };
  return { kind: 'ambiguous', waitMs: 500 };
}
