import type { QuotedSource } from '../../src/core/attachment.ts';
import { z } from 'zod';

// The parts of GitHub's webhook payloads every event family reads, and what classifying one makes of it.

export const User = z.object({ login: z.string(), id: z.number(), type: z.string().optional() }).passthrough();
export const Repository = z
  .object({ name: z.string(), full_name: z.string(), owner: z.object({ login: z.string() }).passthrough() })
  .passthrough();
export const Installation = z.object({ id: z.number() }).passthrough();
const PullRef = z.object({
  ref: z.string(),
  sha: z.string(),
  repo: z.object({ full_name: z.string() }).passthrough().nullable(),
});
export const PullRequest = z
  .object({
    number: z.number(),
    state: z.string().optional(),
    head: PullRef,
    base: PullRef,
    html_url: z.string().optional(),
  })
  .passthrough();
export type PullRequest = z.infer<typeof PullRequest>;

/** Commits pushed to a pull request's branch by someone other than the App: not what Patchbay verified. */
export type PullPushed = {
  installationId: number;
  owner: string;
  repo: string;
  number: number;
  nodeId?: string;
  draft: boolean;
  title: string;
  headSha: string;
  body: string;
  sender: GitHubUser;
};

/** A pull request closed without merging, by whom. */
export type PullClosed = {
  installationId: number;
  owner: string;
  repo: string;
  number: number;
  title: string;
  body: string;
  sender: GitHubUser;
};

/** A finished check suite, check run or workflow run, as the CI follow-up needs it. */
export type CiReport = {
  installationId: number;
  owner: string;
  repo: string;
  event: 'check_suite' | 'check_run' | 'workflow_run';
  /** The check suite, check run or workflow run id. */
  id: number;
  name: string;
  url?: string;
  headSha: string;
  /** failure, timed_out, success, … */
  conclusion: string;
  /** Open pull requests GitHub lists for the head (empty for forks). */
  pullNumbers: number[];
  /** The App that made the check (`github-actions` for Actions jobs, whose check run id is the job id). */
  appSlug?: string;
  /** A check run's own output (title, summary, text), for checks that are not Actions jobs. */
  output?: string;
};

/** `failure` and `timed_out` are failures a follow-up can act on; others (cancelled, neutral, skipped) are not. */
export const failedConclusions = new Set(['failure', 'timed_out']);

export type GitHubUser = { login: string; id: number };

/** What a request asks for, where it lives, and where the reply goes. */
export type WorkRequest = {
  kind: 'pull' | 'issue';
  installationId: number;
  owner: string;
  repo: string;
  number: number;
  sender: GitHubUser;
  /** The message for the session, with the context the model needs (file, line, hunk). */
  text: string;
  /**
   * When `text` quotes an issue someone else wrote: the requester's own words and that body,
   * so its pictures are attributed to its author.
   */
  quoted?: { own: string; others: QuotedSource[] };
  /** What gets the 👀 reaction. */
  react?: { on: 'issue-comment' | 'review-comment' | 'issue'; id: number };
  /** Where progress and refusals are posted: the conversation, or the review thread of `id`. */
  reply: { in: 'issue' } | { in: 'review'; id: number };
  /** The pull request, when the payload carried it. */
  pull?: PullRequest;
  /** The comment only says stop (`@bot stop`): cancel the session's run instead of adding work. */
  stop?: boolean;
};

export type Classified =
  | { kind: 'work'; request: WorkRequest }
  | { kind: 'installation' }
  /** A check suite, check run or workflow run completed (the CI follow-up decides what it means). */
  | { kind: 'ci'; report: CiReport }
  /** A pull request closed without merging (a lesson, when a session opened it). */
  | { kind: 'pull-closed'; closed: PullClosed }
  /** Someone other than the App pushed to a pull request (a status, when a session opened it). */
  | { kind: 'pull-pushed'; pushed: PullPushed }
  /** `@bot autofix off|on` in a pull request conversation, by a person. */
  | { kind: 'autofix'; request: WorkRequest; enabled: boolean }
  | { kind: 'ignore'; reason: string }
  /** Signed by GitHub but not the shape its documentation gives: worth a warning, not a retry. */
  | { kind: 'broken'; reason: string };
