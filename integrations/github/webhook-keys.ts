import { createHash } from 'node:crypto';
import { z } from 'zod';

/** An object field read as `shape` when it has it, else as absent: a key never fails on a body. */
const optional = <T extends z.ZodType>(shape: T) => shape.optional().catch(undefined);
const Ided = z.looseObject({ id: z.number() });
const Numbered = z.looseObject({ number: z.number() });

/** The parts of a webhook body its dedupe and order keys are made from; the rest is ignored. */
const KeyedPayload = z.looseObject({
  action: optional(z.string()),
  comment: optional(z.looseObject({ id: z.unknown(), updated_at: z.unknown() })),
  review: optional(z.looseObject({ id: z.unknown(), submitted_at: z.unknown() })),
  issue: optional(z.looseObject({ id: z.unknown(), number: z.unknown(), updated_at: z.unknown() })),
  label: optional(z.looseObject({ name: z.unknown() })),
  installation: optional(Ided),
  repository: optional(z.looseObject({ full_name: z.string() })),
  pull_request: optional(Numbered),
  // CI events name the pull requests of their head commit.
  check_run: optional(z.looseObject({ pull_requests: optional(z.array(Numbered)) })),
  check_suite: optional(z.looseObject({ pull_requests: optional(z.array(Numbered)) })),
  workflow_run: optional(z.looseObject({ pull_requests: optional(z.array(Numbered)) })),
});

/**
 * What a GitHub webhook means, from its signed body alone: the comment and its action, the review,
 * the issue and its label change; anything else by the body's hash. A redelivery, or the same body
 * replayed under a new X-GitHub-Delivery or X-GitHub-Event, has the same key.
 */
export function githubDedupeKey(body: string, payload: Record<string, unknown>): string {
  const { action = '', comment, review, issue, label } = KeyedPayload.parse(payload);
  if (comment && typeof comment.id === 'number')
    return `${issue ? 'issue-comment' : 'review-comment'}:${comment.id}:${action}:${String(comment.updated_at ?? '')}`;
  if (review && typeof review.id === 'number')
    return `review:${review.id}:${action}:${String(review.submitted_at ?? '')}`;
  if (issue && typeof issue.id === 'number')
    return `issue:${issue.id}:${action}:${String(label?.name ?? '')}:${String(issue.updated_at ?? '')}`;
  return `body:${createHash('sha256').update(body).digest('hex')}`;
}

/**
 * Which deliveries must be worked in the order they came: one installation's events (an
 * installation and the repositories removed from it right after), one issue's or pull request's
 * comments and reviews (a request, then `stop`). Others have none.
 */
export function githubOrderKey(event: string, payload: Record<string, unknown>): string | undefined {
  const keyed = KeyedPayload.parse(payload);
  if ((event === 'installation' || event === 'installation_repositories') && keyed.installation)
    return `installation:${keyed.installation.id}`;
  // A CI event is ordered with the comments of the first pull request of its head commit.
  const ci = keyed.check_run ?? keyed.check_suite ?? keyed.workflow_run;
  const number = keyed.issue?.number ?? keyed.pull_request?.number ?? ci?.pull_requests?.[0]?.number;
  if (keyed.repository && typeof number === 'number')
    return `thread:${keyed.repository.full_name.toLowerCase()}#${number}`;
  return undefined;
}
