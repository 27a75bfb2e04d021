import type { EventOf } from '../../src/core/events.ts';

type ApprovalEvent = EventOf<'approval-requested'> | EventOf<'approval-decided'>;

/** A held command the page offers to approve or deny, until its decision arrives. */
export type OpenApproval = EventOf<'approval-requested'>;

/**
 * The requests still open after `event`, oldest first: a new request opens (a parent's page holds
 * one per sub-task that asks), its decision closes that one only.
 */
export function nextOpenApprovals(open: readonly OpenApproval[], event: ApprovalEvent): OpenApproval[] {
  const others = open.filter((request) => request.requestId !== event.requestId);
  return event.type === 'approval-requested' ? [...others, event] : others;
}

/** How the timeline colours an approval line: an approval is good news, the rest is information. */
export function approvalTone(event: ApprovalEvent): 'good' | 'info' {
  return event.type === 'approval-decided' && event.decision === 'approved' ? 'good' : 'info';
}
