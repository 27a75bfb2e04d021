import type { Actor } from '../../core/actor.ts';
import { allowanceKey, type EgressAllowEntry, type EgressScope } from '../../core/egress-allow.ts';
import type { EventOf } from '../../core/events.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import { allowanceRefusal, allowanceRules } from '../../../sandbox/egress-allowance.ts';
import type { EgressRule } from '../../../sandbox/egress-policy.ts';
import { normalizeHost } from '../../../sandbox/egress-policy.ts';
import type { KnowledgeStore } from '../../harness/knowledge/knowledge-store.ts';
import { knowledgeKey } from '../../harness/knowledge/load-knowledge.ts';
import { isRequester } from './approval-answer.ts';
import type { RequestMarker } from '../store/request-markers.ts';
import type { SessionStore } from '../store/session-store.ts';

/** What allowing and revoking work with: the event log, the repositories' knowledge, the clock. */
export type EgressAllowDeps = {
  store: Pick<SessionStore, 'get' | 'append' | 'events'>;
  /** Without it nothing can be allowed for a repository. */
  knowledge?: Pick<KnowledgeStore, 'changeEgressAllow' | 'get'> | undefined;
  /** Patchbay's own endpoints by name (its public URL's host, its database's): never allowed. */
  protectedHosts?: readonly string[];
  now?: () => Date;
};

/** A person's "allow this host", from any surface. */
export type EgressAllowRequest = {
  host: string;
  port?: number | undefined;
  scope: EgressScope;
  actor: Actor;
  /** slack, github, linear or web: where it was allowed. */
  surface: string;
  /** As for approvals: the surface vouches that this person may decide (write access, the page's sign-in). */
  vouched?: boolean | undefined;
};

export type EgressAllowResult =
  | { kind: 'allowed'; host: string; port?: number | undefined }
  /** Not allowed, with the words to tell the person why. */
  | { kind: 'refused'; message: string };

/**
 * Records that a person allowed a refused host: an `egress-allowed` event either way, and for the
 * repository an entry in its knowledge document. The session's proxy reads both on its next
 * connection (sessionAllowances), so nothing is restarted. Addresses and local names are refused.
 */
export async function allowEgress(
  deps: EgressAllowDeps,
  session: SessionRecord,
  request: EgressAllowRequest,
  marker?: RequestMarker,
): Promise<EgressAllowResult> {
  if (!request.vouched && !isRequester(session, request.actor))
    return {
      kind: 'refused',
      message: `Only ${session.requester.name}, who asked for this session, can allow network access for it.`,
    };
  const refusal = allowanceRefusal(request.host, request.port, deps.protectedHosts);
  if (refusal) return { kind: 'refused', message: `I cannot allow that: ${refusal}.` };
  const host = normalizeHost(request.host)!;
  const { port, scope, actor, surface } = request;
  const at = (deps.now?.() ?? new Date()).toISOString();
  if (scope === 'repository') {
    const entry: EgressAllowEntry = { host, ...(port && { port }), by: actor.name, surface, at, sessionId: session.id };
    const saved = await deps.knowledge?.changeEgressAllow(knowledgeKey(session.repo), (entries) => [
      ...entries.filter((e) => allowanceKey(e) !== allowanceKey(entry)),
      entry,
    ]);
    if (!saved)
      return {
        kind: 'refused',
        message: `${session.repo} has no knowledge document yet, so nothing can be kept for it: allow it for this session.`,
      };
  }
  const event: EventOf<'egress-allowed'> = {
    type: 'egress-allowed',
    host,
    ...(port && { port }),
    scope,
    actor,
    surface,
    at,
  };
  await deps.store.append(
    session.id,
    [{ event, dedupeKey: `egress-allowed:${scope}:${allowanceKey({ host, port })}:${at}` }],
    marker,
  );
  return { kind: 'allowed', host, port };
}

/**
 * Removes a repository's allowance (the page's Repo tab); new connections are refused again. The
 * revocation is recorded on the session it was allowed from, when that session still exists. False
 * when the repository had no such allowance.
 */
export async function revokeEgress(
  deps: EgressAllowDeps,
  repo: string,
  revoke: { host: string; port?: number | undefined; actor: Actor; surface: string },
): Promise<boolean> {
  const key = allowanceKey({ host: normalizeHost(revoke.host) ?? revoke.host, port: revoke.port });
  let removed: EgressAllowEntry | undefined;
  await deps.knowledge?.changeEgressAllow(knowledgeKey(repo), (entries) => {
    removed = entries.find((e) => allowanceKey(e) === key);
    return entries.filter((e) => e !== removed);
  });
  if (!removed) return false;
  const from = removed.sessionId ? await deps.store.get(removed.sessionId) : undefined;
  if (from) {
    const at = (deps.now?.() ?? new Date()).toISOString();
    const { host, port } = removed;
    const event: EventOf<'egress-revoked'> = {
      type: 'egress-revoked',
      host,
      ...(port && { port }),
      scope: 'repository',
      actor: revoke.actor,
      surface: revoke.surface,
      at,
    };
    await deps.store.append(from.id, [{ event, dedupeKey: `egress-revoked:${key}:${at}` }]);
  }
  return true;
}

/**
 * What the session's egress proxy allows beyond SANDBOX_EGRESS_ALLOW: the hosts allowed for this
 * session (its `egress-allowed` events) and for its repository (the knowledge document's list, so a
 * revocation counts at once). Read from the database each time: any worker's proxy sees the same.
 */
export async function sessionAllowances(deps: EgressAllowDeps, sessionId: string): Promise<EgressRule[]> {
  const session = await deps.store.get(sessionId);
  if (!session) return [];
  const events = await deps.store.events(sessionId, { types: ['egress-allowed'] });
  const forSession = events.flatMap(({ event }) =>
    event.type === 'egress-allowed' && event.scope === 'session' ? [{ host: event.host, port: event.port }] : [],
  );
  const stored = await deps.knowledge?.get(knowledgeKey(session.repo));
  const document = stored?.edited?.document ?? stored?.extracted;
  return allowanceRules([...forSession, ...(document?.egressAllow ?? [])]);
}
