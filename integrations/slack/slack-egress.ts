import type { Actor } from '../../src/core/actor.ts';
import {
  allowanceKey,
  egressAllowNotice,
  parseEgressAllowReply,
  type EgressScope,
} from '../../src/core/egress-allow.ts';
import { describeEgressBlock } from '../../src/core/egress-block.ts';
import type { EventOf } from '../../src/core/events.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { ACTION, truncate, type SlackText } from './slack-blocks.ts';
import { escapeMrkdwn } from './slack-text.ts';
import type { SlackStore, SlackThread } from './slack-store.ts';

/**
 * Blocked connections, decided in the thread: a host the allowlist refused gets its own
 * message with "Allow for this session" and "Allow for this repository"; a click or a reply
 * `allow <host> for this session|repository` reaches the session service as an `egress-allow`
 * inbound, and the allowance edits the message so the buttons go.
 */

const HOW_TO_ALLOW =
  'Only the person who asked for this session can allow it. Or reply `allow <host> for this session` (or `for this repository`) in this thread.';

/** The post key of a refused host's message. */
function postKey(host: string, port: number): string {
  return `egress:${host}:${port}`;
}

/** A refused host with the two buttons; only a host the allowlist refused (an address never is offered). */
export function egressBlockedMessage(event: EventOf<'egress-blocked'>): SlackText {
  const text = `:no_entry_sign: The sandbox was refused *${escapeMrkdwn(describeEgressBlock(event))}*. If the work needs it, allow it:`;
  const value = JSON.stringify({ h: event.host, p: event.port });
  const buttons = [
    button(ACTION.allowSession, 'Allow for this session', value),
    button(ACTION.allowRepository, 'Allow for this repository', value),
  ];
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: truncate(text, 3000) } },
      { type: 'actions', block_id: 'egress', elements: buttons },
      { type: 'context', elements: [{ type: 'mrkdwn', text: HOW_TO_ALLOW }] },
    ],
  };
}

/** The message once allowed: who allowed what, for what, from where. */
export function egressAllowedMessage(event: EventOf<'egress-allowed'>): SlackText {
  const text = `:white_check_mark: ${escapeMrkdwn(egressAllowNotice(event))}.`;
  return { text, blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }] };
}

/** An Allow click as the service's inbound; undefined for other buttons or a value that is not ours. */
export function egressClick(
  input: { actionId: string; value: string },
  thread: SlackThread,
  actor: Actor,
): Inbound | undefined {
  const scope: EgressScope | undefined =
    input.actionId === ACTION.allowSession
      ? 'session'
      : input.actionId === ACTION.allowRepository
        ? 'repository'
        : undefined;
  const target = scope && parseValue(input.value);
  if (!scope || !target) return undefined;
  return { kind: 'egress-allow', thread, actor, host: target.h, port: target.p, scope };
}

/** A thread reply `allow <host>[:port] for this session|repository`, as the service's inbound. */
export function egressReply(text: string, thread: SlackThread, actor: Actor): Inbound | undefined {
  const reply = parseEgressAllowReply(text);
  if (!reply) return undefined;
  return {
    kind: 'egress-allow',
    thread,
    actor,
    host: reply.host,
    scope: reply.scope,
    ...(reply.port && { port: reply.port }),
  };
}

/** What the replier lends: its post (recorded under a key) and edit. */
type EgressReplyDeps = {
  post(thread: SlackThread, posts: Map<string, string>, key: string, message: SlackText): Promise<string>;
  update(thread: SlackThread, ts: string, message: SlackText): Promise<void>;
  store: Pick<SlackStore, 'recordPost'>;
  thread: SlackThread;
  posts: Map<string, string>;
};

/** A refusal the allowlist made is posted with its buttons; an allowance edits the message of its host (once). */
export async function replyEgress(
  deps: EgressReplyDeps,
  event: EventOf<'egress-blocked'> | EventOf<'egress-allowed'>,
): Promise<void> {
  const { thread, posts } = deps;
  if (event.type === 'egress-blocked') {
    if (event.reason === 'not-allowed')
      await deps.post(thread, posts, postKey(event.host, event.port), egressBlockedMessage(event));
    return;
  }
  const matching = [...posts.keys()].filter(
    (key) =>
      key === postKey(event.host, event.port ?? 443) || (event.port === undefined && key === postKey(event.host, 80)),
  );
  for (const key of matching) {
    const doneKey = `egress-allowed:${key}:${allowanceKey(event)}`;
    if (posts.has(doneKey)) continue;
    const ts = posts.get(key)!;
    await deps.update(thread, ts, egressAllowedMessage(event));
    await deps.store.recordPost(thread, doneKey, ts);
    posts.set(doneKey, ts);
  }
}

function parseValue(value: string): { h: string; p: number } | undefined {
  try {
    const parsed = JSON.parse(value) as { h?: unknown; p?: unknown };
    return typeof parsed.h === 'string' && Number.isInteger(parsed.p)
      ? { h: parsed.h, p: parsed.p as number }
      : undefined;
  } catch {
    return undefined;
  }
}

function button(actionId: string, label: string, value: string) {
  return {
    type: 'button',
    action_id: actionId,
    text: { type: 'plain_text', text: label },
    value: truncate(value, 2000),
  };
}
