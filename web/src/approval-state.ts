import type { EventOf } from '../../src/core/events.ts';

type ApprovalEvent = EventOf<'approval-requested'> | EventOf<'approval-decided'>;

/** The held command the page offers to approve or deny, until its decision arrives. */
export type OpenApproval = EventOf<'approval-requested'>;

/** The request still open after `event`: a new request opens, its decision closes it. */
export function nextOpenApproval(open: OpenApproval | undefined, event: ApprovalEvent): OpenApproval | undefined {
  if (event.type === 'approval-requested') return event;
  return open?.requestId === event.requestId ? undefined : open;
}

/** How the timeline colours an approval line: an approval is good news, the rest is information. */
export function approvalTone(event: ApprovalEvent): 'good' | 'info' {
  return event.type === 'approval-decided' && event.decision === 'approved' ? 'good' : 'info';
}
