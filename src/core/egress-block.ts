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
