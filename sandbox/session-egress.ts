import type { Logger } from 'pino';
import { PatchbayError } from '../src/core/errors.ts';
import type { EgressPolicy, EgressRule } from './egress-policy.ts';
import {
  startEgressProxy,
  type EgressBlock,
  type EgressProxy,
  type Resolve,
  type SecretRoute,
} from './egress-proxy.ts';
import { RELAY_HOST, RELAY_PORT } from './egress-relay.ts';
import type { EgressSockets } from './egress-sockets.ts';

export type EgressOptions = {
  policy: EgressPolicy;
  secrets?: readonly SecretRoute[];
  /** Each refused host, once per sandbox handle. Must not throw. */
  onBlocked?: (sessionId: string, block: EgressBlock) => void;
  /** Host-side DNS (tests pin names to addresses). */
  resolve?: Resolve;
  /**
   * The hosts people allowed for a session or its repository, read from the database for each
   * target the allowlist refuses, so every worker's proxy sees the same decisions.
   */
  allowed?: (sessionId: string) => Promise<readonly EgressRule[]>;
  /** The host's engine relay, reached from the sandbox at `/engine-relay/` on the proxy's address. */
  engineRelay?: { url: string };
};

/** The egress proxy of one sandbox handle with network 'proxy', and the socket bound into its sandbox. */
export type SessionEgress = { proxy: EgressProxy; socket: string };

/** Starts the handle's proxy on a fresh socket the sandbox user may connect to; refusals are reported with the session's id. */
export async function openSessionEgress(
  egress: EgressOptions | undefined,
  sockets: EgressSockets,
  sessionId: string,
  sessionLog: Logger,
): Promise<SessionEgress> {
  if (!egress)
    throw new PatchbayError(
      'sandbox_unavailable',
      "network 'proxy' needs the egress options (allowlist) on the sandbox provider",
    );
  const socket = await sockets.next();
  const proxy = await startEgressProxy(socket, {
    policy: egress.policy,
    ...(egress.secrets && { secrets: egress.secrets }),
    ...(egress.resolve && { resolve: egress.resolve }),
    selfAuthority: { host: RELAY_HOST, port: RELAY_PORT },
    onBlocked: (block) => egress.onBlocked?.(sessionId, block),
    ...(egress.allowed && { allowed: () => egress.allowed!(sessionId) }),
    ...(egress.engineRelay && { engineRelay: egress.engineRelay }),
    log: sessionLog.child({ component: 'egress-proxy' }),
  });
  await sockets.grant(socket);
  return { proxy, socket };
}
