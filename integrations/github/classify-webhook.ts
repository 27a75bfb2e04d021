import { z } from 'zod';
import { quoteUntrusted } from '../../src/core/quote-untrusted.ts';
import type { BotIdentity } from './github-client.ts';

const User = z.object({ login: z.string(), id: z.number(), type: z.string().optional() }).passthrough();
const Repository = z.object({ name: z.string(), full_name: z.string(), owner: z.object({ login: z.string() }).passthrough() }).passthrough();
const Installation = z.object({ id: z.number() }).passthrough();
const PullRef = z.object({
  ref: z.string(),
  sha: z.string(),
  repo: z.object({ full_name: z.string() }).passthrough().nullable(),
});
export const PullRequest = z.object({ number: z.number(), state: z.string().optional(), head: PullRef, base: PullRef, html_url: z.string().optional() }).passthrough();
export type PullRequest = z.infer<typeof PullRequest>;

const IssueComment = z.object({
  action: z.string(),
  issue: z.object({ number: z.number(), title: z.string(), body: z.string().nullable().optional(), user: User.optional(), pull_request: z.unknown().optional() }).passthrough(),
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
  issue: z.object({ number: z.number(), title: z.string(), body: z.string().nullable().optional(), user: User.optional(), pull_request: z.unknown().optional() }).passthrough(),
  label: z.object({ name: z.string() }).passthrough().optional(),
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});

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
  | { kind: 'ignore'; reason: string }
  /** Signed by GitHub but not the shape its documentation gives: worth a warning, not a retry. */
  | { kind: 'broken'; reason: string };

/** Whether `text` mentions the bot (`@slug`, not `@slug-other` or `x@slug`). */
/** `@bot stop` (or cancel), alone in a comment. */
export function isStopRequest(text: string, bot: BotIdentity): boolean {
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const rest = text.replace(new RegExp(`@${slug}(?![\\w-])`, 'gi'), '').trim().toLowerCase();
  return /^(stop|cancel)( please)?[.!]?$/.test(rest);
}

export function mentions(text: string | null | undefined, bot: BotIdentity): boolean {
  if (!text) return false;
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w@/-])@${slug}(?![\\w-])`, 'i').test(text);
}

function isBot(user: { login: string; type?: string | undefined }, bot: BotIdentity): boolean {
  return user.type === 'Bot' || user.login.toLowerCase() === bot.login.toLowerCase() || user.login.endsWith('[bot]');
}

/**
 * Decides what a webhook delivery asks Patchbay to do, from the payload alone: a request for work
 * (a mention in a PR or issue conversation, a review or review comment, the trigger label), an
 * installation change, or nothing. Pure, so the rules are table-tested.
 */
export function classifyWebhook(event: string, payload: unknown, bot: BotIdentity, triggerLabel: string): Classified {
  switch (event) {
    case 'installation':
    case 'installation_repositories':
      return { kind: 'installation' };
    case 'issue_comment': {
      const p = IssueComment.safeParse(payload);
      if (!p.success) return { kind: 'broken', reason: 'unreadable issue_comment payload' };
      const { issue, comment } = p.data;
      if (p.data.action !== 'created') return { kind: 'ignore', reason: `issue_comment ${p.data.action}` };
      if (isBot(comment.user, bot) || isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'comment by a bot' };
      if (!mentions(comment.body, bot)) return { kind: 'ignore', reason: 'no mention' };
      const isPull = issue.pull_request != null;
      // The comment is the requester's; the issue is its author's words, quoted as such.
      const text = isPull ? comment.body : `${comment.body}\n\n${quoteIssue(issue)}`;
      return work(p.data, {
        kind: isPull ? 'pull' : 'issue',
        number: issue.number,
        sender: comment.user,
        text,
        react: { on: 'issue-comment', id: comment.id },
        reply: { in: 'issue' },
        ...(isStopRequest(comment.body, bot) && { stop: true }),
      });
    }
    case 'pull_request_review_comment': {
      const p = ReviewComment.safeParse(payload);
      if (!p.success) return { kind: 'broken', reason: 'unreadable pull_request_review_comment payload' };
      const { comment, pull_request: pull } = p.data;
      if (p.data.action !== 'created') return { kind: 'ignore', reason: `pull_request_review_comment ${p.data.action}` };
      if (isBot(comment.user, bot) || isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'comment by a bot' };
      if (!mentions(comment.body, bot)) return { kind: 'ignore', reason: 'no mention' };
      const line = comment.line ?? comment.original_line;
      const lines = comment.start_line && line && comment.start_line !== line ? `lines ${comment.start_line}-${line}` : line ? `line ${line}` : 'the file';
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
    case 'pull_request_review': {
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
    case 'issues': {
      const p = IssueLabeled.safeParse(payload);
      if (!p.success) return { kind: 'broken', reason: 'unreadable issues payload' };
      const { issue } = p.data;
      if (p.data.action !== 'labeled' || p.data.label?.name.toLowerCase() !== triggerLabel.toLowerCase()) {
        return { kind: 'ignore', reason: `issues ${p.data.action}` };
      }
      if (isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'labeled by a bot' };
      if (issue.pull_request != null) return { kind: 'ignore', reason: 'label on a pull request' };
      return work(p.data, {
        kind: 'issue',
        number: issue.number,
        sender: p.data.sender,
        text: `Work on GitHub issue #${issue.number} (labelled ${triggerLabel}).\n\n${quoteIssue(issue)}`,
        react: { on: 'issue', id: issue.number },
        reply: { in: 'issue' },
      });
    }
    default:
      return { kind: 'ignore', reason: `event ${event}` };
  }
}

function quoteIssue(issue: { number: number; title: string; body?: string | null; user?: { login: string } | undefined }): string {
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
