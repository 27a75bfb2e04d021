import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import type { EgressPolicy, EgressRule, ProtectedEndpoint } from '../../sandbox/egress-policy.ts';
import type { EgressBlock, SecretRoute } from '../../sandbox/egress-proxy.ts';
import type { Config } from '../config.ts';
import { sessionAllowances, type EgressAllowDeps } from '../sessions/inbound/egress-allowances.ts';
import type { SessionStore } from '../sessions/store/session-store.ts';

/**
 * The egress proxy's policy and where its refusals go. Made before the local sandboxes that take
 * its options, so the endpoints the database and the server listen on, and the store refusals are
 * recorded in, are given to it once they exist.
 */
export type EgressWiring = {
  /** The local sandbox provider's `egress` option. */
  options: {
    policy: EgressPolicy;
    secrets: SecretRoute[];
    onBlocked: (sessionId: string, block: EgressBlock) => void;
    allowed: (sessionId: string) => Promise<readonly EgressRule[]>;
  };
  /** Adds one of Patchbay's own endpoints to those the proxy refuses unless an entry names them exactly. */
  protect(endpoint: ProtectedEndpoint): void;
  /** Refusals become `egress-blocked` events in this store, one per host and port per session. */
  recordTo(store: Pick<SessionStore, 'append'>): void;
  /** The hosts people allowed (for a session or its repository) are read from here; none before it is given. */
  allowFrom(deps: EgressAllowDeps): void;
};

/**
 * Patchbay's own endpoints (this host's addresses, then the database and the server) are protected
 * unless an entry names them exactly. A refusal before the store is given (no run can be going
 * yet) is not recorded.
 */
export function createEgressWiring(config: Config, log: Logger): EgressWiring {
  if (config.sandbox.network === 'host') {
    log.warn(
      "SANDBOX_NETWORK=host: sandboxed commands share this host's network and can reach its database, its API and every service it can; use SANDBOX_NETWORK=proxy unless you trust every repository and prompt",
    );
  }
  const protectedEndpoints: ProtectedEndpoint[] = ownAddresses().map((host) => ({ host }));
  const policy: EgressPolicy = { rules: config.sandbox.egress.allow, protectedEndpoints };
  const events: { store?: Pick<SessionStore, 'append'>; allowances?: EgressAllowDeps } = {};
  const allowed = async (sessionId: string): Promise<readonly EgressRule[]> =>
    events.allowances ? sessionAllowances(events.allowances, sessionId) : [];
  const onBlocked = (sessionId: string, block: EgressBlock): void => {
    events.store
      ?.append(sessionId, [
        { event: { type: 'egress-blocked', ...block }, dedupeKey: `egress-blocked:${block.host}:${block.port}` },
      ])
      .catch((error: unknown) =>
        log.warn({ err: error, sessionId, host: block.host }, 'could not record a refused egress connection'),
      );
  };
  return {
    options: { policy, secrets: config.sandbox.egress.secrets, onBlocked, allowed },
    protect: (endpoint) => protectedEndpoints.push(endpoint),
    recordTo: (store) => {
      events.store = store;
    },
    allowFrom: (deps) => {
      events.allowances = deps;
    },
  };
}

/** Where a database URL listens, as an endpoint the proxy protects. */
export function databaseEndpoint(url: string): ProtectedEndpoint {
  const parsed = new URL(url);
  return { host: parsed.hostname || 'localhost', port: Number(parsed.port || 5432) };
}

/** This host's own non-loopback addresses: every service listening on all interfaces is behind them. */
function ownAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((entries) => entries ?? [])
    .filter((entry) => !entry.internal)
    .map((entry) => entry.address);
}
