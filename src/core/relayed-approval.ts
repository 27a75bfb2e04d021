import type { SessionLookup } from './session-lookup.ts';
import type { SessionRecord } from './session-record.ts';

/**
 * A sub-task's question or approval request as its parent's log names it: the child's session id,
 * then the child's own question or request id. Sub-tasks have no threads of their own,
 * so what they ask is shown and answered in the parent's; the id tells the session service which
 * child to route to.
 */
export function relayedId(childId: string, ownId: string): string {
  return `${childId}:${ownId}`;
}

/** The child and its own request id a relayed request id names; undefined for a session's own request. */
export function splitRelayedRequestId(id: string): { childId: string; requestId: string } | undefined {
  const at = id.indexOf(':');
  // A session's own ids are a tool call's id or `push:<seq>`; a child's session id is a UUID.
  if (at < 1 || id.startsWith('push:')) return undefined;
  return { childId: id.slice(0, at), requestId: id.slice(at + 1) };
}

/**
 * The approval request a written reply in a session's thread (`approve`, `deny <reason>`) decides:
 * the session's own open one, or, while it waits on its sub-tasks with no question of its own,
 * the oldest request a sub-task relayed into its log that no decision closed yet. Undefined when
 * nothing is open: the reply is an ordinary message then.
 */
export async function openApprovalId(
  sessions: Pick<SessionLookup, 'events'>,
  session: Pick<SessionRecord, 'id' | 'status' | 'pendingQuestion'>,
): Promise<string | undefined> {
  if (session.status !== 'waiting') return undefined;
  if (session.pendingQuestion) return session.pendingQuestion.approval?.requestId;
  const events = await sessions.events(session.id, { types: ['approval-requested', 'approval-decided'] });
  const decided = new Set(events.flatMap((e) => (e.event.type === 'approval-decided' ? [e.event.requestId] : [])));
  for (const { event } of events) {
    if (event.type === 'approval-requested' && !decided.has(event.requestId) && splitRelayedRequestId(event.requestId))
      return event.requestId;
  }
  return undefined;
}
