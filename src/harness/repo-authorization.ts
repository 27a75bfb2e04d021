import { PatchbayError } from '../core/errors.ts';
import type { NewEvent, RunLog } from '../core/run-log.ts';
import { checkRepoAccess } from '../core/repo-access.ts';
import type { SessionRecord } from '../core/session-record.ts';
import type { HarnessDeps } from './run-session.ts';

/** A repository the requester may not have work done on, and why. */
export type RefusedRepo = { repo: string; reason: string };

/**
 * The repository the requester's own request was authorized for: the session's, or for a
 * sub-task its parent's (a sub-task's repository is the agent's choice, never the request's).
 */
export async function homeRepo(session: SessionRecord, store: Pick<RunLog, 'get'>): Promise<string> {
  if (!session.parentId) return session.repo;
  const parent = await store.get(session.parentId);
  if (!parent) throw new PatchbayError('not_found', `the parent session ${session.parentId} does not exist`);
  return parent.repo;
}

/**
 * Which of `repos` the session's requester may not have work done on, each with the
 * checker's reason. Asked at the moment the work would start, so an access taken away since an
 * earlier run counts.
 */
export async function refusedRepos(
  session: SessionRecord,
  repos: readonly string[],
  deps: Pick<HarnessDeps, 'repoAccess' | 'store'>,
  signal: AbortSignal,
): Promise<RefusedRepo[]> {
  const checkers = deps.repoAccess ?? [];
  if (checkers.length === 0) return [];
  const home = await homeRepo(session, deps.store);
  const refused: RefusedRepo[] = [];
  for (const repo of new Set(repos)) {
    const decision = await checkRepoAccess(checkers, { requester: session.requester, repo, home, signal });
    if (!decision.allowed) refused.push({ repo, reason: decision.reason });
  }
  return refused;
}

/**
 * Fails the run before its sandbox, mirror or checkout exists when the requester may not have
 * work done on the session's repository: a Linear issue or a thread that named a repository the
 * requester cannot write, or a sub-task's. The failure's reason is what the thread is told.
 */
export async function authorizeSessionRepo(session: SessionRecord, deps: HarnessDeps, signal: AbortSignal) {
  const [refused] = await refusedRepos(session, [session.repo], deps, signal);
  if (refused) throw new PatchbayError('unauthorized', `Refused to work on this repository: ${refused.reason}.`);
}

/** The events that tell a session's threads which repositories were refused to its agent. */
export function refusedEvents(refused: readonly RefusedRepo[], callId: string): NewEvent[] {
  return refused.map(({ repo, reason }) => ({
    event: { type: 'repo-refused', repo, reason },
    dedupeKey: `repo-refused:${callId}:${repo}`,
  }));
}
