import type { EventOf } from '../core/events.ts';
import { relayedId } from '../core/relayed-approval.ts';
import type { NewEvent } from '../core/run-log.ts';
import type { PendingQuestion } from '../core/session-record.ts';
import { readEvents } from './event-log.ts';
import type { Trx } from './session-lock.ts';

/** The child as its parent's log names it. */
type ChildNames = { id: string; subtask_index: number | null; subtask_title: string | null };

/**
 * A sub-task's approval requests as its parent's log shows them (issue 22): the one it waits on
 * now, under the relayed id (relayedId) and with a reason that names the sub-task, and every
 * decision of a relayed request, however it came (a person in the parent's thread, an expiry, a
 * reply instead of a decision), so the parent's threads close what they showed. Dedupe keys make
 * each one once, whichever of the child's runs notes it.
 */
export async function relayedApprovals(
  trx: Trx,
  child: ChildNames,
  question: PendingQuestion | null,
): Promise<NewEvent[]> {
  const events = await readEvents(trx, child.id, {
    types: ['approval-requested', 'approval-decided'],
    trx,
  });
  const relayed: NewEvent[] = [];
  const open = question?.approval?.requestId;
  for (const { event } of events) {
    if (event.type === 'approval-requested' && event.requestId === open) relayed.push(relayedRequest(child, event));
    if (event.type === 'approval-decided') {
      const requestId = relayedId(child.id, event.requestId);
      relayed.push({ event: { ...event, requestId }, dedupeKey: `approval-decided:${requestId}` });
    }
  }
  return relayed;
}

function relayedRequest(child: ChildNames, event: EventOf<'approval-requested'>): NewEvent {
  const requestId = relayedId(child.id, event.requestId);
  const named = `Sub-task ${child.subtask_index} (${child.subtask_title}) holds this command.`;
  return {
    event: { ...event, requestId, reasons: [named, ...event.reasons] },
    dedupeKey: `approval-requested:${requestId}`,
  };
}
