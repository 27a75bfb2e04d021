import { isIP } from 'node:net';
import type { EgressRule } from '../egress-policy.ts';
import type { SandboxSpec } from '../sandbox.ts';

/** The network part of `sandboxes.create` params. */
export type ModalNetworkParams =
  | { blockNetwork: true }
  | { outboundDomainAllowlist: string[]; outboundCidrAllowlist: string[] }
  | Record<string, never>;

/**
 * Maps the sandbox spec onto Modal's network settings. 'none' blocks the network; 'proxy' (the
 * default) lets out only the domains the local egress proxy would allow, with no CIDRs; an empty
 * allowlist blocks the network; 'host' leaves Modal's default (open). Modal matches domains, not
 * ports, and has no address rules: address entries are dropped and ports ignored, which the caller
 * logs once. `relayHost` (PUBLIC_URL's host, where engines reach the relay) is let out besides the
 * allowlist: by name, or as its one address when it is an address.
 */
export function modalNetwork(
  network: SandboxSpec['network'],
  rules: readonly EgressRule[],
  relayHost?: string,
): { params: ModalNetworkParams; dropped: string[] } {
  if (network === 'host') return { params: {}, dropped: [] };
  if (network === 'none') return { params: { blockNetwork: true }, dropped: [] };
  const domains: string[] = [];
  const cidrs: string[] = [];
  const dropped: string[] = [];
  if (relayHost) {
    const address = relayHost.replace(/^\[|\]$/g, '');
    if (isIP(address)) cidrs.push(`${address}/${isIP(address) === 4 ? 32 : 128}`);
    else domains.push(relayHost);
  }
  for (const rule of rules) {
    if (rule.kind === 'domain') {
      const name = rule.wildcard ? `*.${rule.domain}` : rule.domain;
      if (!domains.includes(name)) domains.push(name);
      if (rule.port !== undefined && rule.port !== 80 && rule.port !== 443)
        dropped.push(`${name}:${rule.port} (Modal allows domains on every port)`);
    } else {
      dropped.push(`${rule.address} (Modal's domain allowlist takes no addresses)`);
    }
  }
  if (domains.length === 0 && cidrs.length === 0) return { params: { blockNetwork: true }, dropped };
  return { params: { outboundDomainAllowlist: domains, outboundCidrAllowlist: cidrs }, dropped };
}
