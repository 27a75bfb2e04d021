/**
 * A written answer to an approval request: `approve` (or `approve once`), or `deny` with an
 * optional reason (`deny not before the release`). Undefined for anything else, which stays an
 * ordinary message. Slack thread replies and GitHub comments read the same words.
 */
export function parseApprovalReply(text: string): { decision: 'approved' | 'denied'; reason?: string } | undefined {
  const match = /^\s*(approve(?: once)?|deny)\b[\s:,.-]*([\s\S]*)$/i.exec(text);
  if (!match) return undefined;
  const rest = match[2]!.trim();
  if (match[1]!.toLowerCase().startsWith('approve')) return rest ? undefined : { decision: 'approved' };
  return rest ? { decision: 'denied', reason: rest } : { decision: 'denied' };
}
