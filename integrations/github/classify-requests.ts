import { z } from 'zod';
import { quoteUntrusted } from '../../src/core/quote-untrusted.ts';
import { autofixRequest, isBot, isStopRequest, mentions } from './bot-mention.ts';
import type { BotIdentity } from './github-client.ts';
import {
  Installation,
  PullRequest,
  Repository,
  User,
  type Classified,
  type GitHubUser,
  type WorkRequest,
} from './webhook-payloads.ts';

// Requests for work: a mention in an issue's or pull request's conversation, in a review comment or
// a review, and the trigger label on an issue.

/** An issue (or a pull request's conversation, which GitHub sends as an issue with `pull_request`). */
const IssueSummary = z
  .object({
    number: z.number(),
    title: z.string(),
    body: z.string().nullable().optional(),
    user: User.optional(),
    pull_request: z.unknown().optional(),
  })
  .passthrough();
const IssueComment = z.object({
  action: z.string(),
  issue: IssueSummary,
  comment: z.object({ id: z.number(), body: z.string(), user: User, html_url: z.string().optional() }).passthrough(),
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});
const ReviewComment = z.object({
  action: z.string(),
  comment: z
    .object({
      id: z.number(),
      body: z.string(),
      user: User,
      path: z.string(),
      line: z.number().nullable().optional(),
      original_line: z.number().nullable().optional(),
      start_line: z.number().nullable().optional(),
      diff_hunk: z.string(),
      in_reply_to_id: z.number().optional(),
    })
    .passthrough(),
  pull_request: PullRequest,
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});
const Review = z.object({
  action: z.string(),
  review: z.object({ id: z.number(), body: z.string().nullable(), user: User, state: z.string() }).passthrough(),
  pull_request: PullRequest,
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});
const IssueLabeled = z.object({
  action: z.string(),
  issue: IssueSummary,
  label: z.object({ name: z.string() }).passthrough().optional(),
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});

/** A comment in an issue's or pull request's conversation: a request, `@bot stop`, or `@bot autofix off|on`. */
export function classifyIssueComment(payload: unknown, bot: BotIdentity): Classified {
  const p = IssueComment.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable issue_comment payload' };
  const { issue, comment } = p.data;
  if (p.data.action !== 'created') return { kind: 'ignore', reason: `issue_comment ${p.data.action}` };
  if (isBot(comment.user, bot) || isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'comment by a bot' };
  if (!mentions(comment.body, bot)) return { kind: 'ignore', reason: 'no mention' };
  const isPull = issue.pull_request != null;
  const autofix = isPull ? autofixRequest(comment.body, bot) : undefined;
  if (autofix !== undefined) {
    const request = work(p.data, {
      kind: 'pull',
      number: issue.number,
      sender: comment.user,
      text: comment.body,
      react: { on: 'issue-comment', id: comment.id },
      reply: { in: 'issue' },
    });
    return request.kind === 'work' ? { kind: 'autofix', request: request.request, enabled: autofix } : request;
  }
  // The comment is the requester's; the issue is its author's words, quoted as such.
  const text = isPull ? comment.body : `${comment.body}\n\n${quoteIssue(issue)}`;
  const quoted = isPull ? undefined : quotedIssue(issue, comment.user, comment.body);
  return work(p.data, {
    kind: isPull ? 'pull' : 'issue',
    number: issue.number,
    sender: comment.user,
    text,
    ...(quoted && { quoted }),
    react: { on: 'issue-comment', id: comment.id },
    reply: { in: 'issue' },
    ...(isStopRequest(comment.body, bot) && { stop: true }),
  });
}

/** A comment on a pull request's diff: a request with the file, line and hunk it is about. */
export function classifyReviewComment(payload: unknown, bot: BotIdentity): Classified {
  const p = ReviewComment.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable pull_request_review_comment payload' };
  const { comment, pull_request: pull } = p.data;
  if (p.data.action !== 'created') return { kind: 'ignore', reason: `pull_request_review_comment ${p.data.action}` };
  if (isBot(comment.user, bot) || isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'comment by a bot' };
  if (!mentions(comment.body, bot)) return { kind: 'ignore', reason: 'no mention' };
  const line = comment.line ?? comment.original_line;
  const lines =
    comment.start_line && line && comment.start_line !== line
      ? `lines ${comment.start_line}-${line}`
      : line
        ? `line ${line}`
        : 'the file';
  const fence = comment.diff_hunk.includes('```') ? '~~~~' : '```';
  const text = `Review comment on ${comment.path}, ${lines}:\n${fence}diff\n${comment.diff_hunk}\n${fence}\n\n${comment.body}`;
  return work(p.data, {
    kind: 'pull',
    number: pull.number,
    sender: comment.user,
    text,
    react: { on: 'review-comment', id: comment.id },
    // Replies to replies are not allowed: answer in the thread of its first comment.
    reply: { in: 'review', id: comment.in_reply_to_id ?? comment.id },
    pull,
  });
}

/** A submitted review that mentions the bot: a request with the review's verdict and words. */
export function classifyReview(payload: unknown, bot: BotIdentity): Classified {
  const p = Review.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable pull_request_review payload' };
  const { review, pull_request: pull } = p.data;
  if (p.data.action !== 'submitted') return { kind: 'ignore', reason: `pull_request_review ${p.data.action}` };
  if (isBot(review.user, bot) || isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'review by a bot' };
  if (!mentions(review.body, bot)) return { kind: 'ignore', reason: 'no mention' };
  const verdict = review.state.toLowerCase().replace('_', ' ');
  return work(p.data, {
    kind: 'pull',
    number: pull.number,
    sender: review.user,
    text: `Pull request review (${verdict}):\n${review.body ?? ''}`,
    reply: { in: 'issue' },
    pull,
  });
}

/** The trigger label added to an issue (not a pull request) by a person: a request to work on it. */
export function classifyIssueLabeled(payload: unknown, bot: BotIdentity, triggerLabel: string): Classified {
  const p = IssueLabeled.safeParse(payload);
  if (!p.success) return { kind: 'broken', reason: 'unreadable issues payload' };
  const { issue } = p.data;
  if (p.data.action !== 'labeled' || p.data.label?.name.toLowerCase() !== triggerLabel.toLowerCase()) {
    return { kind: 'ignore', reason: `issues ${p.data.action}` };
  }
  if (isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'labeled by a bot' };
  if (issue.pull_request != null) return { kind: 'ignore', reason: 'label on a pull request' };
  const quoted = quotedIssue(issue, p.data.sender, '');
  return work(p.data, {
    kind: 'issue',
    number: issue.number,
    sender: p.data.sender,
    text: `Work on GitHub issue #${issue.number} (labelled ${triggerLabel}).\n\n${quoteIssue(issue)}`,
    ...(quoted && { quoted }),
    react: { on: 'issue', id: issue.number },
    reply: { in: 'issue' },
  });
}

/** The issue's body as another person's text, when someone other than the requester wrote it. */
function quotedIssue(
  issue: { number: number; body?: string | null | undefined; user?: { login: string } | undefined },
  requester: GitHubUser,
  own: string,
): WorkRequest['quoted'] {
  if (issue.user?.login === requester.login) return undefined;
  const author = issue.user ? `@${issue.user.login}` : 'an unknown GitHub user';
  return { own, others: [{ author, where: `GitHub issue #${issue.number}`, text: issue.body ?? '' }] };
}

function quoteIssue(issue: {
  number: number;
  title: string;
  body?: string | null | undefined;
  user?: { login: string } | undefined;
}): string {
  return quoteUntrusted({
    what: `GitHub issue #${issue.number}`,
    author: issue.user ? `@${issue.user.login}` : 'an unknown GitHub user',
    title: issue.title,
    body: issue.body ?? '',
  });
}

function work(
  payload: { repository: z.infer<typeof Repository>; installation?: { id: number } | undefined },
  request: Omit<WorkRequest, 'installationId' | 'owner' | 'repo' | 'sender'> & { sender: GitHubUser },
): Classified {
  if (!payload.installation) return { kind: 'ignore', reason: 'delivery without an installation (not an App webhook)' };
  return {
    kind: 'work',
    request: {
      ...request,
      sender: { login: request.sender.login, id: request.sender.id },
      installationId: payload.installation.id,
      owner: payload.repository.owner.login,
      repo: payload.repository.name,
    },
  };
}
