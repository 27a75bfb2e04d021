import { z } from 'zod';

/**
 * Blocked connections, decided in the thread: the words for allowing a host the sandbox
 * was refused, shared by the surfaces that offer it, the session service that records it and the
 * knowledge document that keeps a repository's allowances.
 */

/** For this session only, or for every session on the repository (kept in its knowledge document). */
export const EgressScope = z.enum(['session', 'repository']);
export type EgressScope = z.infer<typeof EgressScope>;

/** One host a person allowed for a repository, as its knowledge document keeps it. */
export const EgressAllowEntry = z.object({
  host: z.string().min(1).max(253),
  /** The port the refused connection used; absent allows 80 and 443. */
  port: z.number().int().min(1).max(65535).optional(),
  /** Who allowed it, where and when; the session it was allowed from gets the revocation's event. */
  by: z.string().max(200),
  surface: z.string().max(40),
  at: z.string(),
  sessionId: z.string().optional(),
});
export type EgressAllowEntry = z.infer<typeof EgressAllowEntry>;

/** `host:port`, or the bare host when no port was named: the key of one allowance. */
export function allowanceKey(a: { host: string; port?: number | undefined }): string {
  return a.port === undefined ? a.host : `${a.host}:${a.port}`;
}

/**
 * A written allow: `allow registry.example.com for this session`, `allow files.example:8443 for
 * this repository` (`repo` too). Undefined for anything else, which stays an ordinary message.
 * Slack thread replies and GitHub comments read the same words.
 */
export function parseEgressAllowReply(text: string): { host: string; port?: number; scope: EgressScope } | undefined {
  const match = /^\s*allow\s+(\S+?)\s+for\s+(?:this\s+|the\s+)?(session|repository|repo)\s*[.!]?\s*$/i.exec(text);
  if (!match) return undefined;
  const target = match[1]!.replace(/^`|`$/g, '');
  const scope: EgressScope = match[2]!.toLowerCase() === 'session' ? 'session' : 'repository';
  // `host:port`, `[v6]:port` or a bare host (an IPv6 literal's colons are not a port).
  const withPort = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target);
  if (withPort) return { host: withPort[1]!, port: Number(withPort[2]), scope };
  return { host: target, scope };
}

/** "Ann allowed files.example:8443 for this repository, from slack": the audit line every surface shows. */
export function egressAllowNotice(event: {
  type: 'egress-allowed' | 'egress-revoked';
  host: string;
  port?: number | undefined;
  scope: EgressScope;
  actor: { name: string };
  surface: string;
}): string {
  const what = event.port === undefined ? `${event.host} (ports 80 and 443)` : `${event.host}:${event.port}`;
  const verb = event.type === 'egress-allowed' ? 'allowed' : 'revoked';
  const scope = event.scope === 'session' ? 'this session' : 'this repository';
  return `${event.actor.name} ${verb} network access to ${what} for ${scope}, from ${event.surface}`;
}
