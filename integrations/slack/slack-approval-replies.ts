import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import { approvalDecidedMessage, approvalMessage } from './slack-approvals.ts';
import type { SlackText } from './slack-blocks.ts';
import type { SlackStore, SlackThread } from './slack-store.ts';

/** What the replier lends for approval messages: its post (recorded under a key) and edit. */
type ApprovalReplyDeps = {
  post(thread: SlackThread, posts: Map<string, string>, key: string, message: SlackText): Promise<string>;
  update(thread: SlackThread, ts: string, message: SlackText): Promise<void>;
  store: Pick<SlackStore, 'recordPost'>;
  thread: SlackThread;
  posts: Map<string, string>;
  /** The batch the event came in, where its request may be too. */
  events: readonly StoredEvent[];
};

/**
 * An approval request is posted with its buttons; its decision edits that message so the buttons
 * go (once: the edit is recorded as a post of its own).
 */
export async function replyApproval(
  deps: ApprovalReplyDeps,
  event: EventOf<'approval-requested'> | EventOf<'approval-decided'>,
): Promise<void> {
  const { thread, posts } = deps;
  const key = `approval:${event.requestId}`;
  if (event.type === 'approval-requested') {
    await deps.post(thread, posts, key, approvalMessage(event));
    return;
  }
  const ts = posts.get(key);
  const decidedKey = `approval-decided:${event.requestId}`;
  if (!ts || posts.has(decidedKey)) return;
  const requested = deps.events.find(
    (e) => e.event.type === 'approval-requested' && e.event.requestId === event.requestId,
  )?.event as EventOf<'approval-requested'> | undefined;
  await deps.update(thread, ts, approvalDecidedMessage(requested, event));
  await deps.store.recordPost(thread, decidedKey, ts);
  posts.set(decidedKey, ts);
}
