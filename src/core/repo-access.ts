import type { Actor } from './actor.ts';
import { repoShortName } from './repo-ref.ts';

/** Whether a session may work on a repository, and if not, why, in words for the agent and the thread. */
export type RepoAccessDecision = { allowed: true } | { allowed: false; reason: string };

/**
 * The question asked of every repository a session touches: may `requester` have work
 * done on `repo`? `home` is the repository the requester's own request was authorized for (the
 * session's, or its parent's for a sub-task), so a requester the checker cannot identify stays
 * where that request put them.
 */
export type RepoAccessQuestion = { requester: Actor; repo: string; home: string; signal: AbortSignal };

/**
 * What the harness asks before anything is cloned, pushed or read on a repository: an integration
 * that holds credentials for it (GitHub) answers from the requester's own access there. Undefined
 * when the repository is not one this checker gives credentials for (another host, a local path):
 * no credential of its reaches such a repository. Throws only on a fault (the service unreachable).
 */
export type RepoAccess = {
  readonly name: string;
  check(question: RepoAccessQuestion): Promise<RepoAccessDecision | undefined>;
};

/** The first checker's answer; allowed when none of them gives credentials for the repository. */
export async function checkRepoAccess(
  checkers: readonly RepoAccess[],
  question: RepoAccessQuestion,
): Promise<RepoAccessDecision> {
  for (const checker of checkers) {
    const decision = await checker.check(question);
    if (decision) return decision;
  }
  return { allowed: true };
}

/** Words for a `repo-refused` event, shared by every surface that shows one. */
export function repoRefusedNotice(event: { repo: string; reason: string }): string {
  return `Refused to work on ${repoShortName(event.repo)}: ${event.reason}. Nothing was cloned, pushed or read there.`;
}
