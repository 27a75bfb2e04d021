/**
 * Words for an `egress-blocked` event, shared by every surface that shows one (thread status lines,
 * the CLI, the web page's server side) and by the egress proxy's refusal message.
 */
export function describeEgressRefusal(reason: string): string {
  switch (reason) {
    case 'not-allowed':
      return 'not in SANDBOX_EGRESS_ALLOW';
    case 'loopback':
      return 'a loopback address';
    case 'private':
      return 'a private address';
    case 'link-local':
      return 'a link-local address (cloud metadata)';
    case 'reserved':
      return 'a reserved address';
    case 'patchbay':
      return "Patchbay's own server or database";
    default:
      return reason;
  }
}

/** "evil.example:443 (not in SANDBOX_EGRESS_ALLOW)" */
export function describeEgressBlock(block: { host: string; port: number; reason: string }): string {
  const host = block.host.includes(':') ? `[${block.host}]` : block.host;
  return `${host}:${block.port} (${describeEgressRefusal(block.reason)})`;
}

/**
 * The line a thread's status shows for the hosts a session's sandbox was refused, so a person can
 * allow them. `blocked` holds describeEgressBlock texts, oldest first; `how` says how this surface
 * allows a host from the thread, e.g. "reply `allow <host> for this session`".
 */
export function egressBlockedNote(blocked: readonly string[], how?: string): string | undefined {
  if (blocked.length === 0) return undefined;
  const shown = blocked.slice(0, 5).join(', ');
  const more = blocked.length > 5 ? ` and ${blocked.length - 5} more` : '';
  const fromThread = how ? `${how}, or ` : '';
  return `Network access refused: ${shown}${more}. If the work needs a host the allowlist refused, ${fromThread}an admin can add it to SANDBOX_EGRESS_ALLOW.`;
}
