import { BlockList, isIP } from 'node:net';

/**
 * The limits the real Modal service holds a client to, as the fake enforces them (pure checks; the
 * fake turns a failed check into the gRPC status the service answers with and records a refusal).
 */

/** gRPC's default receive limit, which Modal's servers keep: a larger request message is refused with RESOURCE_EXHAUSTED. */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Modal refuses an exec whose command (its arguments together) is larger than this. */
export const MAX_COMMAND_BYTES = 64 * 1024;

/** What grpc's server says for an oversized message (grpc-js `Received message larger than max`). */
export function messageTooLarge(bytes: number): string | undefined {
  return bytes > MAX_MESSAGE_BYTES ? `Received message larger than max (${bytes} vs. ${MAX_MESSAGE_BYTES})` : undefined;
}

/**
 * The command's size: its arguments' bytes, in the words of the SDK's own check (`validateExecArgs`,
 * which counts UTF-16 units before sending; the service gets bytes, so text outside ASCII can pass
 * the SDK and still be refused here).
 */
export function commandTooLarge(args: readonly string[]): string | undefined {
  const bytes = args.reduce((sum, arg) => sum + Buffer.byteLength(arg, 'utf8'), 0);
  return bytes > MAX_COMMAND_BYTES
    ? `Total length of CMD arguments must be less than ${MAX_COMMAND_BYTES} bytes (ARG_MAX). Got ${bytes} bytes.`
    : undefined;
}

const domainPattern = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/**
 * The network part of a sandbox definition (`NetworkAccess`): BLOCKED (2) takes no lists, ALLOWLIST
 * (3) takes host names (a leading `*.` for subdomains; no scheme, port or path) and CIDRs.
 */
export function networkRefusal(
  networkAccess: { networkAccessType?: number; allowedDomains?: string[]; allowedCidrs?: string[] } | undefined,
): string | undefined {
  if (!networkAccess) return undefined;
  const domains = networkAccess.allowedDomains ?? [];
  const cidrs = networkAccess.allowedCidrs ?? [];
  if (networkAccess.networkAccessType === 2 && (domains.length > 0 || cidrs.length > 0))
    return 'a blocked network takes no allowlist';
  for (const domain of domains)
    if (!domainPattern.test(domain))
      return `allowed domain ${JSON.stringify(domain)} is not a host name (or *.host name)`;
  for (const cidr of cidrs) {
    const [address, bits, extra] = cidr.split('/');
    const family = isIP(address ?? '');
    const max = family === 4 ? 32 : 128;
    if (!family || extra !== undefined || bits === undefined || !/^\d+$/.test(bits) || Number(bits) > max)
      return `allowed CIDR ${JSON.stringify(cidr)} is not a CIDR block`;
  }
  return undefined;
}

/** Modal's `NetworkAccess.network_access_type` values (api.proto). */
const OPEN = 1;
const BLOCKED = 2;
const ALLOWLIST = 3;

/** One outbound connection from a sandbox: the host name it asked for (when it went by name) and the address. */
export type OutboundTarget = { host?: string; address: string };

/**
 * Whether Modal lets a sandbox's outbound connection out, by the network part of its definition as
 * the SDK sends it (`buildOutboundNetworkAccess`): no `networkAccess` or OPEN lets everything out;
 * BLOCKED (`blockNetwork`) lets nothing out; ALLOWLIST (`outboundDomainAllowlist`,
 * `outboundCidrAllowlist`) lets out a connection to a listed host name (`*.example.com` for its
 * subdomains, not itself) or to an address inside a listed CIDR block, and nothing else: an empty
 * CIDR list allows no addresses (the SDK sends an unset list as an empty one). Ports do not matter.
 */
export function outboundAllowed(
  networkAccess: { networkAccessType?: number; allowedDomains?: string[]; allowedCidrs?: string[] } | undefined,
  target: OutboundTarget,
): boolean {
  const type = networkAccess?.networkAccessType ?? OPEN;
  if (type === BLOCKED) return false;
  if (type !== ALLOWLIST) return true;
  const host = target.host?.toLowerCase().replace(/\.$/, '');
  const byName =
    host !== undefined &&
    (networkAccess?.allowedDomains ?? []).some((domain) =>
      domain.startsWith('*.') ? host.endsWith(domain.slice(1)) : host === domain,
    );
  return byName || (networkAccess?.allowedCidrs ?? []).some((cidr) => inCidr(target.address, cidr));
}

function inCidr(address: string, cidr: string): boolean {
  const [network = '', bits = ''] = cidr.split('/');
  const family = isIP(address);
  if (family === 0 || family !== isIP(network)) return false;
  const list = new BlockList();
  list.addSubnet(network, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}
