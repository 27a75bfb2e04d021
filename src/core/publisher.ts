import type { SessionRecord } from './session-record.ts';

export type PublishInput = {
  session: SessionRecord;
  branch: string;
  baseBranch: string;
  commit: string;
  summary: string;
  signal: AbortSignal;
};

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
