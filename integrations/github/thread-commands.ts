import type { Actor } from '../../src/core/actor.ts';
import { parseApprovalReply } from '../../src/core/approval-reply.ts';
import { parseEgressAllowReply } from '../../src/core/egress-allow.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';

/**
 * A comment that decides something for the thread's session rather than asking for work:
 * `@bot approve` / `@bot deny <reason>` on its open approval request, or `@bot allow <host> for
 * this session|repository` for a host its sandbox was refused (issue 23). `said` is the comment's
 * first paragraph after its leading mentions. The request check already saw write access, which on
 * GitHub lets a person decide for the requester (`vouched`).
 */
export function threadCommand(
  said: string,
  existing: Pick<SessionRecord, 'status' | 'pendingQuestion'> | undefined,
  thread: ThreadRef,
  actor: Actor,
): Inbound | undefined {
  if (!existing) return undefined;
  const approval = existing.status === 'waiting' && existing.pendingQuestion?.approval;
  const decided = approval && parseApprovalReply(said);
  if (decided) return { kind: 'approval', thread, actor, requestId: approval.requestId, ...decided, vouched: true };
  const allow = parseEgressAllowReply(said);
  if (allow) return { kind: 'egress-allow', thread, actor, ...allow, vouched: true };
  return undefined;
}
