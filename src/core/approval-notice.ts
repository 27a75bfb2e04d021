import type { EventOf } from './events.ts';

/** One line about an approval request or its decision, for the CLI's log and the web page's timeline. */
export function approvalNotice(event: EventOf<'approval-requested'> | EventOf<'approval-decided'>): string {
  if (event.type === 'approval-requested')
    return `Approval asked to run \`${event.command}\` (held for ${event.classes.join(', ')}): ${event.reasons.join(' ')}`;
  const verdict = { approved: 'Approved', denied: 'Denied', expired: 'Expired' }[event.decision];
  const who = event.actor ? ` by ${event.actor.name}` : '';
  return `${verdict}${who} from ${event.surface}${event.reason ? `: ${event.reason}` : ''}`;
}
