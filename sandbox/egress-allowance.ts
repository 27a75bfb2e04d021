import { normalizeHost, type EgressRule } from './egress-policy.ts';
import { canonicalIp, classifyIp } from './ip-address.ts';

/**
 * What people may allow from a thread: one host name, exactly, on one port or on 80 and
 * 443. Never an address, a wildcard or a name that only means something inside this network: those
 * stay with SANDBOX_EGRESS_ALLOW, which the operator edits. Pure; the proxy still checks every
 * address an allowed name resolves to, so a public name pointing at a private address stays refused.
 */

/** A host a person allowed, as the proxy reads it: the name and, when the block named one, its port. */
export type EgressAllowance = { host: string; port?: number | undefined };

/** Names that resolve inside this host or network, whatever the resolver says: never allowed from a thread. */
const LOCAL_SUFFIXES = ['localhost', 'local', 'internal', 'lan', 'home.arpa', 'localdomain', 'intranet', 'corp'];

/**
 * Why `host` can never be allowed from a thread, in words to tell the person, or undefined when it
 * may be. `protectedHosts` are Patchbay's own endpoints by name (its server, its database).
 */
export function allowanceRefusal(
  rawHost: string,
  port: number | undefined,
  protectedHosts: readonly string[] = [],
): string | undefined {
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535))
    return `${port} is not a port number`;
  const trimmed = rawHost.trim().toLowerCase();
  if (trimmed.startsWith('*.')) return 'a wildcard can only be allowed in SANDBOX_EGRESS_ALLOW, by the operator';
  const host = normalizeHost(trimmed);
  if (!host) return `${JSON.stringify(rawHost)} is not a host name`;
  const literal = canonicalIp(host);
  if (literal) {
    const kind = classifyIp(literal);
    const what = kind === 'public' ? 'an IP address' : `${article(kind)} ${kind} address`;
    return `${trimmed} is ${what}: only host names can be allowed from a thread, and private, loopback, link-local and reserved addresses never`;
  }
  if (looksNumeric(host))
    return `${host} reads as an IP address to the system resolver (numeric or hex labels): only host names can be allowed`;
  if (!host.includes('.')) return `${host} is a single-label name, which only means something inside this network`;
  const suffix = LOCAL_SUFFIXES.find((s) => host === s || host.endsWith(`.${s}`));
  if (suffix) return `${host} is a local name (.${suffix}), which only means something inside this network`;
  if (protectedHosts.some((name) => normalizeHost(name) === host))
    return `${host} is Patchbay's own server or database`;
  return undefined;
}

/** The proxy's rules for what people allowed: exact names only, whatever the list holds. */
export function allowanceRules(allowances: readonly EgressAllowance[]): EgressRule[] {
  return allowances.flatMap((a): EgressRule[] => {
    if (allowanceRefusal(a.host, a.port) !== undefined) return [];
    const domain = normalizeHost(a.host)!;
    return [{ kind: 'domain', domain, wildcard: false, ...(a.port !== undefined && { port: a.port }) }];
  });
}

/** Whether every label is a number (decimal, octal or 0x hex), as inet_aton would read `0x7f.1` or `2130706433`. */
function looksNumeric(host: string): boolean {
  return host.split('.').every((label) => /^(?:0x[0-9a-f]*|\d+)$/.test(label));
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? 'an' : 'a';
}
