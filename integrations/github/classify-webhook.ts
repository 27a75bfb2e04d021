import { z } from 'zod';
import { quoteUntrusted } from '../../src/core/quote-untrusted.ts';
import type { BotIdentity } from './github-client.ts';

const User = z.object({ login: z.string(), id: z.number(), type: z.string().optional() }).passthrough();
const Repository = z
  .object({ name: z.string(), full_name: z.string(), owner: z.object({ login: z.string() }).passthrough() })
  .passthrough();
const Installation = z.object({ id: z.number() }).passthrough();
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

const IssueComment = z.object({
  action: z.string(),
  issue: z
    .object({
      number: z.number(),
      title: z.string(),
      body: z.string().nullable().optional(),
      user: User.optional(),
      pull_request: z.unknown().optional(),
    })
    .passthrough(),
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
  issue: z
    .object({
      number: z.number(),
      title: z.string(),
      body: z.string().nullable().optional(),
      user: User.optional(),
      pull_request: z.unknown().optional(),
    })
    .passthrough(),
  label: z.object({ name: z.string() }).passthrough().optional(),
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});

const PullRefs = z.array(
  z.object({ number: z.number(), head: z.object({ sha: z.string() }).passthrough().optional() }).passthrough(),
);
const App = z.object({ slug: z.string().optional() }).passthrough().nullable().optional();
const CheckRunEvent = z.object({
  action: z.string(),
  check_run: z
    .object({
      id: z.number(),
      name: z.string(),
      head_sha: z.string(),
      html_url: z.string().nullable().optional(),
      conclusion: z.string().nullable(),
      output: z
        .object({
          title: z.string().nullable().optional(),
          summary: z.string().nullable().optional(),
          text: z.string().nullable().optional(),
        })
        .passthrough()
        .optional(),
      app: App,
      pull_requests: PullRefs.optional(),
      check_suite: z
        .object({ id: z.number(), head_branch: z.string().nullable().optional(), pull_requests: PullRefs.optional() })
        .passthrough()
        .optional(),
    })
    .passthrough(),
  repository: Repository,
  installation: Installation.optional(),
});
const CheckSuiteEvent = z.object({
  action: z.string(),
  check_suite: z
    .object({
      id: z.number(),
      head_sha: z.string(),
      head_branch: z.string().nullable().optional(),
      conclusion: z.string().nullable(),
      app: App,
      pull_requests: PullRefs.optional(),
    })
    .passthrough(),
  repository: Repository,
  installation: Installation.optional(),
});
const WorkflowRunEvent = z.object({
  action: z.string(),
  workflow_run: z
    .object({
      id: z.number(),
      name: z.string().nullable().optional(),
      head_sha: z.string(),
      head_branch: z.string().nullable().optional(),
      conclusion: z.string().nullable(),
      html_url: z.string().optional(),
      pull_requests: PullRefs.optional(),
      run_attempt: z.number().optional(),
    })
    .passthrough(),
  workflow: z.object({ name: z.string() }).passthrough().nullable().optional(),
  repository: Repository,
  installation: Installation.optional(),
});

const PullRequestEvent = z.object({
  action: z.string(),
  pull_request: z
    .object({
      number: z.number(),
      title: z.string(),
      body: z.string().nullable().optional(),
      merged: z.boolean().nullable().optional(),
      node_id: z.string().optional(),
      draft: z.boolean().optional(),
      head: z.object({ sha: z.string() }).passthrough().optional(),
    })
    .passthrough(),
  repository: Repository,
  sender: User,
  installation: Installation.optional(),
});

/** Commits pushed to a pull request's branch by someone other than the App: not what Patchbay verified. */
export type PullPushed = {
  installationId: number;
  owner: string;
  repo: string;
  number: number;
  nodeId?: string;
  draft: boolean;
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

/** Whether `text` mentions the bot (`@slug`, not `@slug-other` or `x@slug`). */
/** `@bot stop` (or cancel), alone in a comment. */
export function isStopRequest(text: string, bot: BotIdentity): boolean {
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const rest = text
    .replace(new RegExp(`@${slug}(?![\\w-])`, 'gi'), '')
    .trim()
    .toLowerCase();
  return /^(stop|cancel)( please)?[.!]?$/.test(rest);
}

/** `@bot autofix off` / `on`, alone in a comment: undefined when the comment says something else. */
export function autofixRequest(text: string, bot: BotIdentity): boolean | undefined {
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const rest = text
    .replace(new RegExp(`@${slug}(?![\\w-])`, 'gi'), '')
    .trim()
    .toLowerCase();
  const m = /^autofix (off|on)[.!]?$/.exec(rest);
  return m ? m[1] === 'on' : undefined;
}

export function mentions(text: string | null | undefined, bot: BotIdentity): boolean {
  if (!text) return false;
  const slug = bot.slug.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^\\w@/-])@${slug}(?![\\w-])`, 'i').test(text);
}

export function isBot(user: { login: string; type?: string | undefined }, bot: BotIdentity): boolean {
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
      if (p.data.action !== 'created')
        return { kind: 'ignore', reason: `pull_request_review_comment ${p.data.action}` };
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
    case 'pull_request': {
      const p = PullRequestEvent.safeParse(payload);
      if (!p.success) return { kind: 'broken', reason: 'unreadable pull_request payload' };
      const pull = p.data.pull_request;
      if (p.data.action === 'synchronize' && pull.head && p.data.installation && !isBot(p.data.sender, bot)) {
        return {
          kind: 'pull-pushed',
          pushed: {
            installationId: p.data.installation.id,
            owner: p.data.repository.owner.login,
            repo: p.data.repository.name,
            number: pull.number,
            ...(pull.node_id && { nodeId: pull.node_id }),
            draft: pull.draft ?? false,
            headSha: pull.head.sha,
            body: pull.body ?? '',
            sender: { login: p.data.sender.login, id: p.data.sender.id },
          },
        };
      }
      if (p.data.action !== 'closed') return { kind: 'ignore', reason: `pull_request ${p.data.action}` };
      if (pull.merged) return { kind: 'ignore', reason: 'pull request merged' };
      if (isBot(p.data.sender, bot)) return { kind: 'ignore', reason: 'closed by a bot' };
      if (!p.data.installation)
        return { kind: 'ignore', reason: 'delivery without an installation (not an App webhook)' };
      return {
        kind: 'pull-closed',
        closed: {
          installationId: p.data.installation.id,
          owner: p.data.repository.owner.login,
          repo: p.data.repository.name,
          number: pull.number,
          title: pull.title,
          body: pull.body ?? '',
          sender: { login: p.data.sender.login, id: p.data.sender.id },
        },
      };
    }
    case 'check_run': {
      const p = CheckRunEvent.safeParse(payload);
      if (!p.success) return { kind: 'broken', reason: 'unreadable check_run payload' };
      const run = p.data.check_run;
      if (p.data.action !== 'completed' || !run.conclusion)
        return { kind: 'ignore', reason: `check_run ${p.data.action}` };
      const output = [run.output?.title, run.output?.summary, run.output?.text].filter(Boolean).join('\n\n');
      return ci(p.data, {
        event: 'check_run',
        id: run.id,
        name: run.name,
        ...(run.html_url && { url: run.html_url }),
        headSha: run.head_sha,
        conclusion: run.conclusion,
        pullNumbers: pullNumbers(run.pull_requests, run.check_suite?.pull_requests),
        ...(run.app?.slug && { appSlug: run.app.slug }),
        ...(output && { output }),
      });
    }
    case 'check_suite': {
      const p = CheckSuiteEvent.safeParse(payload);
      if (!p.success) return { kind: 'broken', reason: 'unreadable check_suite payload' };
      const suite = p.data.check_suite;
      if (p.data.action !== 'completed' || !suite.conclusion)
        return { kind: 'ignore', reason: `check_suite ${p.data.action}` };
      return ci(p.data, {
        event: 'check_suite',
        id: suite.id,
        name: suite.app?.slug ? `${suite.app.slug} check suite` : 'check suite',
        headSha: suite.head_sha,
        conclusion: suite.conclusion,
        pullNumbers: pullNumbers(suite.pull_requests),
        ...(suite.app?.slug && { appSlug: suite.app.slug }),
      });
    }
    case 'workflow_run': {
      const p = WorkflowRunEvent.safeParse(payload);
      if (!p.success) return { kind: 'broken', reason: 'unreadable workflow_run payload' };
      const run = p.data.workflow_run;
      if (p.data.action !== 'completed' || !run.conclusion)
        return { kind: 'ignore', reason: `workflow_run ${p.data.action}` };
      return ci(p.data, {
        event: 'workflow_run',
        id: run.id,
        name: run.name || p.data.workflow?.name || `workflow run ${run.id}`,
        ...(run.html_url && { url: run.html_url }),
        headSha: run.head_sha,
        conclusion: run.conclusion,
        pullNumbers: pullNumbers(run.pull_requests),
        appSlug: 'github-actions',
      });
    }
    default:
      return { kind: 'ignore', reason: `event ${event}` };
  }
}

function pullNumbers(...lists: (z.infer<typeof PullRefs> | undefined)[]): number[] {
  return [...new Set(lists.flatMap((list) => (list ?? []).map((p) => p.number)))];
}

function ci(
  payload: { repository: z.infer<typeof Repository>; installation?: { id: number } | undefined },
  report: Omit<CiReport, 'installationId' | 'owner' | 'repo'>,
): Classified {
  if (!payload.installation) return { kind: 'ignore', reason: 'delivery without an installation (not an App webhook)' };
  return {
    kind: 'ci',
    report: {
      ...report,
      installationId: payload.installation.id,
      owner: payload.repository.owner.login,
      repo: payload.repository.name,
    },
  };
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
