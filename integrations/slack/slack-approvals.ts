import type { EventOf } from '../../src/core/events.ts';
import type { Actor } from '../../src/core/actor.ts';
import { parseApprovalReply } from '../../src/core/approval-reply.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { ACTION, truncate, type SlackText } from './slack-blocks.ts';
import { escapeMrkdwn } from './slack-text.ts';
import type { SlackThread } from './slack-store.ts';

/** The reason a Deny click gives when the person gives none. */
export const DEFAULT_DENIAL = 'denied in Slack without a reason';

const HOW_TO_ANSWER =
  'Only the person who asked for this session can decide. To give a reason for a denial, reply `deny <reason>` in this thread.';

/** An approval request as its own message: the exact command, why it was held, what approving does, and two buttons. */
export function approvalMessage(event: EventOf<'approval-requested'>): SlackText {
  const command = truncate(event.command, 2500).replaceAll('```', "'''");
  const why = event.reasons.map((r) => `• ${escapeMrkdwn(r)}`).join('\n');
  const text = `:raised_hand: *Approval needed* to run:\n\`\`\`${command}\`\`\``;
  const details = `*Why it was held* (${escapeMrkdwn(event.classes.join(', '))}):\n${why}\n*Approving:* ${escapeMrkdwn(event.approving)}`;
  const buttons = [
    button(ACTION.approve, 'Approve once', event.requestId, 'primary'),
    button(ACTION.deny, 'Deny', event.requestId, 'danger'),
  ];
  return {
    text: `${text}\n${details}`,
    blocks: [
      section(text),
      section(details),
      { type: 'actions', block_id: 'approval', elements: buttons },
      { type: 'context', elements: [{ type: 'mrkdwn', text: HOW_TO_ANSWER }] },
    ],
  };
}

/** The request once decided: the buttons give way to who decided what, and why. */
export function approvalDecidedMessage(
  requested: EventOf<'approval-requested'> | undefined,
  decided: EventOf<'approval-decided'>,
): SlackText {
  const command = requested ? `\`${truncate(requested.command, 500).replaceAll('`', "'")}\`` : 'the held command';
  const verdict =
    decided.decision === 'approved'
      ? `:white_check_mark: ${escapeMrkdwn(decided.actor?.name ?? 'Someone')} approved running ${command} once.`
      : decided.decision === 'denied'
        ? `:no_entry: ${escapeMrkdwn(decided.actor?.name ?? 'Someone')} denied running ${command}${decided.reason ? `: ${escapeMrkdwn(decided.reason)}` : '.'}`
        : `:hourglass: No one decided in time, so ${command} did not run.`;
  return { text: verdict, blocks: [section(verdict)] };
}

/** An Approve or Deny click as the session service's inbound; undefined for other buttons. */
export function approvalClick(
  input: { actionId: string; value: string },
  thread: SlackThread,
  actor: Actor,
): Inbound | undefined {
  const decision =
    input.actionId === ACTION.approve ? 'approved' : input.actionId === ACTION.deny ? 'denied' : undefined;
  if (!decision || !input.value) return undefined;
  return {
    kind: 'approval',
    thread,
    actor,
    requestId: input.value,
    decision,
    ...(decision === 'denied' && { reason: DEFAULT_DENIAL }),
  };
}

/** A thread reply `approve` or `deny <reason>` while a request is open, as the service's inbound. */
export function approvalReply(text: string, requestId: string, thread: SlackThread, actor: Actor): Inbound | undefined {
  const reply = parseApprovalReply(text);
  if (!reply) return undefined;
  const reason = reply.decision === 'denied' ? (reply.reason ?? DEFAULT_DENIAL) : undefined;
  return { kind: 'approval', thread, actor, requestId, decision: reply.decision, ...(reason && { reason }) };
}

function button(actionId: string, label: string, value: string, style: 'primary' | 'danger') {
  return { type: 'button', action_id: actionId, text: { type: 'plain_text', text: label }, value, style };
}

function section(text: string) {
  return { type: 'section', text: { type: 'mrkdwn', text: truncate(text, 3000) } };
}
