import { lookup } from 'node:dns/promises';
import type { Logger } from 'pino';
import {
  checkEgressAddress,
  checkEgressTarget,
  describeEgressRefusal,
  normalizeHost,
  type EgressPolicy,
  type EgressRefusal,
  type EgressRule,
} from './egress-policy.ts';
import { canonicalIp } from './ip-address.ts';

/** A connection the proxy refused: what the sandbox asked for and why. */
export type EgressBlock = { host: string; port: number; reason: EgressRefusal };

/** Host-side name resolution; every address it returns is checked before the proxy connects to it. */
export type Resolve = (host: string) => Promise<Array<{ address: string; family: number }>>;

/** What the proxy does with one target: connect to this checked address, or answer with this status. */
export type EgressDecision =
  | { ok: true; host: string; port: number; address: string; family: number }
  | { ok: false; status: 400 | 403 | 502; message: string };

/** One proxy's way of deciding: how it resolves names, and who hears of a refusal (once per host and port). */
export type EgressGate = {
  resolve: Resolve;
  /** `host:port` of every refusal reported so far. */
  reported: Set<string>;
  log: Logger;
  /** Must not throw. */
  onBlocked: (block: EgressBlock) => void;
  /**
   * The hosts people allowed for this session or its repository, read again for every
   * target the allowlist refuses, so an allowance or a revocation counts from the next connection.
   * Only exact names count; the addresses they resolve to are checked like any other.
   */
  allowed?: () => Promise<readonly EgressRule[]>;
};

export const defaultResolve: Resolve = (host) => lookup(host, { all: true, verbatim: true });

/** The whole policy for one request: allowlist, then DNS on the host, then every address checked. */
export async function authorize(
  gate: EgressGate,
  rawHost: string,
  port: number,
  policy: EgressPolicy,
): Promise<EgressDecision> {
  const host = normalizeHost(rawHost);
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535)
    return { ok: false, status: 400, message: `not a host and port: ${rawHost}:${port}` };
  const refusal = checkEgressTarget(policy, host, port);
  const allowedPolicy = refusal === 'not-allowed' ? await withAllowed(gate, policy) : policy;
  const stillRefused = allowedPolicy === policy ? refusal : checkEgressTarget(allowedPolicy, host, port);
  if (stillRefused) return refuse(gate, host, port, stillRefused);
  const candidates = await addressesOf(gate.resolve, host);
  if (!Array.isArray(candidates)) return candidates;
  let first: EgressRefusal | undefined;
  for (const candidate of candidates) {
    // The operator's policy, not the allowed one: what people allowed never lets an address through.
    const addressRefusal = checkEgressAddress(policy, candidate.address, port);
    if (!addressRefusal) return { ok: true, host, port, address: candidate.address, family: candidate.family };
    first ??= addressRefusal;
  }
  return first
    ? refuse(gate, host, port, first)
    : { ok: false, status: 502, message: `Patchbay egress proxy: ${host} has no address` };
}

/** The policy with the names people allowed; the policy itself when there are none (or they cannot be read). */
async function withAllowed(gate: EgressGate, policy: EgressPolicy): Promise<EgressPolicy> {
  if (!gate.allowed) return policy;
  const rules = await gate.allowed().catch((error: unknown) => {
    gate.log.warn({ err: error }, 'could not read the hosts people allowed; refusing as the allowlist does');
    return [];
  });
  // Exact names only: an address rule would also let the address check pass, which no thread may do.
  const names = rules.filter((rule) => rule.kind === 'domain' && !rule.wildcard);
  return names.length > 0 ? { ...policy, rules: [...policy.rules, ...names] } : policy;
}

/** An address literal as itself, a name as what the host's resolver says; a failed lookup as the answer to send. */
async function addressesOf(
  resolve: Resolve,
  host: string,
): Promise<Array<{ address: string; family: number }> | EgressDecision> {
  const literal = canonicalIp(host);
  if (literal) return [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
  try {
    return await resolve(host);
  } catch (error) {
    return {
      ok: false,
      status: 502,
      message: `Patchbay egress proxy could not resolve ${host}: ${(error as Error).message}`,
    };
  }
}

function refuse(gate: EgressGate, host: string, port: number, reason: EgressRefusal): EgressDecision {
  // Per host AND port: an allowed host refused on another port is a different thing to allow.
  const key = `${host}:${port}`;
  if (!gate.reported.has(key)) {
    gate.reported.add(key);
    gate.log.info({ host, port, reason }, 'egress refused');
    gate.onBlocked({ host, port, reason });
  }
  const ask =
    reason === 'not-allowed'
      ? "People in the session's thread can allow this host for the session or the repository, or the person who runs Patchbay can add it to SANDBOX_EGRESS_ALLOW."
      : 'This address cannot be allowed from a thread; only the person who runs Patchbay can, naming it exactly in SANDBOX_EGRESS_ALLOW.';
  const message = `Patchbay egress proxy refused ${host}:${port}: ${describeEgressRefusal(reason)}. ${ask}`;
  return { ok: false, status: 403, message };
}
