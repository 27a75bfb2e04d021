import { z } from 'zod';
import { mentions } from './bot-mention.ts';
import type { BotIdentity } from './github-client.ts';

// What polling makes of GitHub's REST objects: the webhook each would have been, built from the
// objects GitHub's list endpoints return, so the same classifier, dedupe and interpreter read it.

/** A repository an installation covers, as GET /installation/repositories lists it. */
export const PolledRepo = z.looseObject({
  id: z.number(),
  name: z.string(),
  full_name: z.string(),
  owner: z.looseObject({ login: z.string() }),
});
export type PolledRepo = z.infer<typeof PolledRepo>;

/** An issue or review comment as the repository-wide comment lists return it. */
export const PolledComment = z.looseObject({
  id: z.number(),
  body: z.string().nullable().optional(),
  user: z.looseObject({ login: z.string(), id: z.number() }).nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  issue_url: z.string().optional(),
  pull_request_url: z.string().optional(),
});
export type PolledComment = z.infer<typeof PolledComment>;

/** One event to hand the inbound pipeline, as a webhook of that name would carry it. */
export type PolledEvent = { event: string; id: string; payload: Record<string, unknown> };

/**
 * Which listed comments are new since `since` (created at or after it: an older comment listed
 * because it was edited is an `edited` webhook, which asks for nothing) and mention the App; and
 * where the next look starts: the newest `updated_at` seen, on GitHub's clock.
 */
export function newMentions(
  comments: readonly PolledComment[],
  since: Date,
  bot: BotIdentity,
): { mentions: PolledComment[]; nextSince: Date } {
  const fresh = comments.filter((c) => new Date(c.created_at) >= since && mentions(c.body, bot));
  const newest = Math.max(since.getTime(), ...comments.map((c) => new Date(c.updated_at).getTime()));
  return { mentions: fresh, nextSince: new Date(newest) };
}

/** The number at the end of a comment's `issue_url` or `pull_request_url`. */
export function numberOf(url: string | undefined): number | undefined {
  const m = /\/(\d+)$/.exec(url ?? '');
  return m ? Number(m[1]) : undefined;
}

/**
 * A comment as its `created` webhook carried it: `updated_at` is its creation time there, so the
 * comment's dedupe key is the one its webhook would have had, whichever look or process finds it.
 */
function asCreated(comment: PolledComment): Record<string, unknown> {
  return { ...comment, updated_at: comment.created_at };
}

type Where = { repository: PolledRepo; installationId: number };

/** issue_comment `created`: the comment, its issue (a pull request's conversation carries `pull_request`). */
export function issueCommentEvent(where: Where, comment: PolledComment, issue: unknown): PolledEvent {
  return {
    event: 'issue_comment',
    id: `issue-comment-${comment.id}`,
    payload: {
      action: 'created',
      issue,
      comment: asCreated(comment),
      repository: where.repository,
      installation: { id: where.installationId },
      sender: comment.user,
    },
  };
}

/** pull_request_review_comment `created`: the comment on the diff and its pull request. */
export function reviewCommentEvent(where: Where, comment: PolledComment, pull: unknown): PolledEvent {
  return {
    event: 'pull_request_review_comment',
    id: `review-comment-${comment.id}`,
    payload: {
      action: 'created',
      comment: asCreated(comment),
      pull_request: pull,
      repository: where.repository,
      installation: { id: where.installationId },
      sender: comment.user,
    },
  };
}

/**
 * installation `created` for an installation and every repository it covers now, as GitHub's
 * webhook lists them: the repositories other surfaces offer and git credentials are found from.
 * The same list again has the same body, so only a changed one is recorded again.
 */
export function installationEvent(installation: { id: number }, repositories: readonly PolledRepo[]): PolledEvent {
  return {
    event: 'installation',
    id: `installation-${installation.id}`,
    payload: {
      action: 'created',
      installation,
      repositories: repositories.map((r) => ({ id: r.id, full_name: r.full_name })),
    },
  };
}

export const PolledPull = z.looseObject({
  number: z.number(),
  user: z.looseObject({ login: z.string() }).nullable(),
  head: z.looseObject({ ref: z.string(), sha: z.string() }),
  base: z.looseObject({ ref: z.string(), sha: z.string() }),
});
export type PolledPull = z.infer<typeof PolledPull>;

export const PolledSuite = z.looseObject({
  id: z.number(),
  status: z.string().nullable(),
  conclusion: z.string().nullable(),
  head_sha: z.string(),
  pull_requests: z
    .array(z.looseObject({ number: z.number() }))
    .nullable()
    .optional(),
});
export type PolledSuite = z.infer<typeof PolledSuite>;

/**
 * check_suite `completed` for a finished suite on the head of one of the App's pull requests; the
 * pull request is named in `pull_requests` as GitHub's webhook names a same-repository one.
 */
export function checkSuiteEvent(where: Where, suite: PolledSuite, pull: PolledPull): PolledEvent | undefined {
  if (suite.status !== 'completed' || !suite.conclusion) return undefined;
  const listed = suite.pull_requests ?? [];
  const ref = { number: pull.number, head: { ref: pull.head.ref, sha: pull.head.sha }, base: pull.base };
  return {
    event: 'check_suite',
    id: `check-suite-${suite.id}`,
    payload: {
      action: 'completed',
      check_suite: {
        ...suite,
        pull_requests: listed.some((p) => p.number === pull.number) ? listed : [...listed, ref],
      },
      repository: where.repository,
      installation: { id: where.installationId },
    },
  };
}
