import type { Actor } from '../../src/core/actor.ts';
import { parseApprovalReply } from '../../src/core/approval-reply.ts';
import { parseEgressAllowReply } from '../../src/core/egress-allow.ts';
import type { Inbound } from '../../src/core/inbound.ts';
import { openApprovalId } from '../../src/core/relayed-approval.ts';
import type { SessionLookup } from '../../src/core/session-lookup.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';

/**
 * A comment that decides something for the thread's session rather than asking for work:
 * `@bot approve` / `@bot deny <reason>` on its open approval request (its own, or one a sub-task relayed), or `@bot allow <host> for
 * this session|repository` for a host its sandbox was refused. `said` is the comment's
 * first paragraph after its leading mentions. The request check already saw write access, which on
 * GitHub lets a person decide for the requester (`vouched`).
 */
export async function threadCommand(
  said: string,
  existing: Pick<SessionRecord, 'id' | 'status' | 'pendingQuestion'> | undefined,
  thread: ThreadRef,
  actor: Actor,
  sessions: Pick<SessionLookup, 'events'>,
): Promise<Inbound | undefined> {
  if (!existing) return undefined;
  const decided = parseApprovalReply(said);
  const requestId = decided && (await openApprovalId(sessions, existing));
  if (decided && requestId) return { kind: 'approval', thread, actor, requestId, ...decided, vouched: true };
  const allow = parseEgressAllowReply(said);
  if (allow) return { kind: 'egress-allow', thread, actor, ...allow, vouched: true };
  return undefined;
}
