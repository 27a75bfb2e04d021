import { PatchbayError } from '../src/core/errors.ts';
export { describeEgressRefusal } from '../src/core/egress-block.ts';
import { canonicalIp, classifyIp } from './ip-address.ts';

/**
 * Which hosts a sandbox may reach through the egress proxy. Pure: the proxy resolves names on the
 * host and asks this module about every address it would connect to, so a local or a remote
 * sandbox provider applies exactly the same allowlist.
 */

/** One SANDBOX_EGRESS_ALLOW entry. Without a port it allows 80 and 443. */
export type EgressRule =
  | { kind: 'domain'; domain: string; wildcard: boolean; port?: number }
  | { kind: 'address'; address: string; port?: number };

/** A Patchbay endpoint (its server, its database, this host's own addresses); no port means every port. */
export type ProtectedEndpoint = { host: string; port?: number };

export type EgressPolicy = {
  rules: readonly EgressRule[];
  protectedEndpoints: readonly ProtectedEndpoint[];
};

/** Why a connection was refused: not on the allowlist, or what the address it resolves to is. */
export type EgressRefusal = 'not-allowed' | 'loopback' | 'private' | 'link-local' | 'reserved' | 'patchbay';

export const DEFAULT_PORTS: readonly number[] = [80, 443];

/** The package registries a build usually needs; the configured GitHub host is added for reads. */
export const DEFAULT_EGRESS_ALLOW: readonly string[] = [
  // npm
  'registry.npmjs.org',
  'registry.yarnpkg.com',
  // PyPI
  'pypi.org',
  'files.pythonhosted.org',
  // crates.io
  'crates.io',
  'index.crates.io',
  'static.crates.io',
  // Go modules
  'proxy.golang.org',
  'sum.golang.org',
  // Maven Central
  'repo.maven.apache.org',
  'repo1.maven.org',
  // Debian
  'deb.debian.org',
  'security.debian.org',
];

const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Parses SANDBOX_EGRESS_ALLOW: comma-separated `host`, `*.domain`, `host:port`, `10.1.2.3:8080`,
 * `[::1]:8080`; the word `default` stands for the default list. Throws config_invalid naming the
 * bad entry.
 */
export function parseEgressAllow(text: string, options: { githubHost?: string } = {}): EgressRule[] {
  const rules: EgressRule[] = [];
  for (const raw of text.split(',')) {
    const entry = raw.trim().toLowerCase();
    // `none` lets nothing through: every connection is refused (and shows as an egress-blocked event).
    if (!entry || entry === 'none') continue;
    if (entry === 'default') {
      rules.push(...defaultEgressRules(options));
      continue;
    }
    const rule = parseRule(entry);
    if (!rule) {
      throw new PatchbayError(
        'config_invalid',
        `SANDBOX_EGRESS_ALLOW: ${JSON.stringify(raw.trim())} is not a host pattern (host, *.domain, host:port, 10.1.2.3:8080 or [::1]:8080)`,
      );
    }
    rules.push(rule);
  }
  return rules;
}

export function defaultEgressRules(options: { githubHost?: string } = {}): EgressRule[] {
  const entries = [...DEFAULT_EGRESS_ALLOW, ...(options.githubHost ? [options.githubHost] : [])];
  return entries.map((entry) => parseRule(entry.toLowerCase())!).filter(Boolean);
}

function parseRule(entry: string): EgressRule | undefined {
  let host = entry;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2]) port = Number(bracketed[2]);
  } else if ((entry.match(/:/g) ?? []).length === 1) {
    const [h, p] = entry.split(':') as [string, string];
    if (!/^\d+$/.test(p)) return undefined;
    host = h;
    port = Number(p);
  }
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) return undefined;
  const address = canonicalIp(host);
  if (address) return { kind: 'address', address, ...(port && { port }) };
  const wildcard = host.startsWith('*.');
  const domain = wildcard ? host.slice(2) : host;
  if (!DOMAIN.test(domain)) return undefined;
  return { kind: 'domain', domain, wildcard, ...(port && { port }) };
}

/** Lower-case, no brackets or trailing dot, IP literals in canonical form; undefined when it is no host name. */
export function normalizeHost(host: string): string | undefined {
  let h = host.trim().toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  const address = canonicalIp(h);
  if (address) return address;
  return DOMAIN.test(h) ? h : undefined;
}

/**
 * First question, before any DNS: may the sandbox ask for `host:port` at all? `host` must be
 * normalized. Returns the refusal, or undefined when the proxy may resolve and go on.
 */
export function checkEgressTarget(policy: EgressPolicy, host: string, port: number): EgressRefusal | undefined {
  if (!policy.rules.some((rule) => ruleMatches(rule, host, port))) return 'not-allowed';
  if (!namesExactly(policy, host, port) && isProtected(policy, host, port)) return 'patchbay';
  return undefined;
}

/**
 * Second question, for each address the host resolved to (or the literal the sandbox gave): may
 * the proxy connect to it? Loopback, private, link-local (cloud metadata) and reserved addresses and
 * Patchbay's own endpoints are refused unless an entry names this exact address and port.
 */
export function checkEgressAddress(policy: EgressPolicy, address: string, port: number): EgressRefusal | undefined {
  const canonical = canonicalIp(address);
  if (!canonical) return 'reserved';
  if (namesExactly(policy, canonical, port)) return undefined;
  if (isProtected(policy, canonical, port)) return 'patchbay';
  const kind = classifyIp(canonical);
  return kind === 'public' ? undefined : kind;
}

function namesExactly(policy: EgressPolicy, host: string, port: number): boolean {
  return policy.rules.some((rule) => rule.kind === 'address' && rule.address === host && rule.port === port);
}

function isProtected(policy: EgressPolicy, host: string, port: number): boolean {
  return policy.protectedEndpoints.some((endpoint) => {
    const name = normalizeHost(endpoint.host);
    return name === host && (endpoint.port === undefined || endpoint.port === port);
  });
}

function ruleMatches(rule: EgressRule, host: string, port: number): boolean {
  const portOk = rule.port === undefined ? DEFAULT_PORTS.includes(port) : rule.port === port;
  if (!portOk) return false;
  if (rule.kind === 'address') return rule.address === host;
  return rule.wildcard ? host.endsWith(`.${rule.domain}`) : host === rule.domain;
}
