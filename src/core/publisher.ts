import type { GateDecision } from './evidence.ts';
import type { SourcedRule } from './repository-scout.ts';
import type { SessionRecord } from './session-record.ts';

export type PublishInput = {
  session: SessionRecord;
  branch: string;
  baseBranch: string;
  commit: string;
  summary: string;
  signal: AbortSignal;
  /**
   * The gate's decision on `commit`: the publisher marks the PR ready only when `ready`, else keeps
   * or turns it draft, publishes the commit status and the evidence. Absent when nothing was checked.
   */
  gate?: GateDecision;
  /** What the scout learned of the repository: a title convention, an open-PR limit, checks. */
  rules?: readonly SourcedRule[];
};

/**
 * What a publisher says before a new pull request opens: `hold` when it must not open (the reason,
 * for the thread: a bot would close it), and notes the thread should read (a CLA to sign, with its link).
 */
export type PreOpenCheck = { hold?: string; notes: string[] };

export type PublishedPullRequest = { url: string; number: number };

/**
 * What the harness calls after it pushed a session's branch: an integration opens or updates the
 * pull request (GitHub) or links it where the work was asked for. Returns the pull request, or
 * undefined when the repository is not one it publishes to. Must be idempotent per branch. The
 * composition root passes every integration's publisher; the harness calls them in order.
 */
export type Publisher = {
  readonly name: string;
  publish(input: PublishInput): Promise<PublishedPullRequest | undefined>;
  /** Asked before `publish` on every push; says nothing when the branch already has its pull request. */
  checkBeforeOpen?(input: PublishInput): Promise<PreOpenCheck>;
};

/**
 * Credentials for the host's network git calls on one repository (an environment for git, say an
 * installation token helper). Undefined when this provider has none for that repository; the
 * harness asks each provider in order and uses the first answer.
 */
export type GitCredentials = {
  readonly name: string;
  gitEnv(repo: string, signal: AbortSignal): Promise<Record<string, string> | undefined>;
};

/** The git environment of the first provider that has one for this repository. */
export async function firstGitEnv(
  providers: readonly GitCredentials[],
  repo: string,
  signal: AbortSignal,
): Promise<Record<string, string> | undefined> {
  for (const credentials of providers) {
    const env = await credentials.gitEnv(repo, signal);
    if (env) return env;
  }
  return undefined;
}
