import type { Actor } from '../../src/core/actor.ts';
import { approvalNotice } from '../../src/core/approval-notice.ts';
import { parseApprovalReply } from '../../src/core/approval-reply.ts';
import type { EventOf } from '../../src/core/events.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { openApprovalId } from '../../src/core/relayed-approval.ts';
import type { SessionLookup } from '../../src/core/session-lookup.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import type { Activity } from './linear-api.ts';

/** The options of an approval's select elicitation; choosing one sends its value as the prompt. */
const OPTIONS = [{ value: 'Approve once' }, { value: 'Deny' }];

/**
 * An approval request as a select elicitation (the exact command, why it was held, what approving
 * does), and its decision as a thought.
 */
export function approvalActivity(event: EventOf<'approval-requested'> | EventOf<'approval-decided'>): Activity {
  if (event.type === 'approval-decided') return { content: { type: 'thought', body: approvalNotice(event) } };
  const body = [
    `Approval needed to run:\n\n\`\`\`\n${event.command}\n\`\`\``,
    `Held for ${event.classes.join(', ')}: ${event.reasons.join(' ')}`,
    `${event.approving} To deny with a reason, reply \`deny <reason>\`.`,
  ].join('\n\n');
  return { content: { type: 'elicitation', body }, options: OPTIONS };
}

/**
 * A prompt that answers the session's open approval request (`Approve once`, `deny <reason>`; its
 * own, or one a sub-task relayed: openApprovalId), as an approval inbound.
 */
export async function approvalPrompt(
  sessions: Pick<SessionLookup, 'events'>,
  session: Pick<SessionRecord, 'id' | 'status' | 'pendingQuestion'>,
  input: { thread: ThreadRef; actor: Actor; body: string; dedupeKey: string },
): Promise<Inbound | undefined> {
  const reply = parseApprovalReply(input.body);
  const requestId = reply && (await openApprovalId(sessions, session));
  if (!reply || !requestId) return undefined;
  const { thread, actor, dedupeKey } = input;
  return { kind: 'approval', thread, actor, requestId, ...reply, dedupeKey };
}
