import { z } from 'zod';
import { revertedCommit, type PullFinished, type PullKey } from '../../src/core/pull-outcome.ts';
import { isBot } from './bot-mention.ts';
import type { BotIdentity } from './github-client.ts';

const User = z.object({ login: z.string(), type: z.string().optional() }).passthrough();
const Repository = z
  .object({
    name: z.string(),
    owner: z.object({ login: z.string() }).passthrough(),
    default_branch: z.string().optional(),
  })
  .passthrough();
const Installation = z.object({ id: z.number() }).passthrough();
const Base = { repository: Repository, installation: Installation };

const PullClosedEvent = z.object({
  ...Base,
  action: z.literal('closed'),
  sender: User,
  pull_request: z
    .object({
      number: z.number(),
      merged: z.boolean().nullable().optional(),
      merged_at: z.string().nullable().optional(),
      closed_at: z.string().nullable().optional(),
      merge_commit_sha: z.string().nullable().optional(),
      merged_by: User.nullable().optional(),
    })
    .passthrough(),
});
const PushEvent = z.object({
  ...Base,
  ref: z.string(),
  sender: User,
  commits: z.array(z.object({ id: z.string(), message: z.string(), timestamp: z.string() }).passthrough()),
});
const ReviewEvent = z.object({
  ...Base,
  action: z.literal('submitted'),
  review: z.object({ id: z.number(), user: User }).passthrough(),
  pull_request: z.object({ number: z.number() }).passthrough(),
});
const Completed = z
  .object({ head_sha: z.string(), conclusion: z.string().nullable(), updated_at: z.string().nullable().optional() })
  .passthrough();
const CheckEvent = z.object({
  ...Base,
  action: z.literal('completed'),
  check_suite: Completed.optional(),
  check_run: Completed.optional(),
  workflow_run: Completed.optional(),
});
const StatusEvent = z.object({ ...Base, sha: z.string(), state: z.string(), updated_at: z.string().optional() });

type Where = { owner: string; repo: string };

/** What a webhook tells about the outcome of pull requests (whichever PR it is; the ledger knows which it tracks). */
export type OutcomeSignal =
  | { kind: 'finished'; pull: PullFinished }
  /** A person pushed these commits to `branch` (the branch of a PR, perhaps). */
  | { kind: 'human-commits'; where: Where; branch: string; shas: string[] }
  | { kind: 'review'; pull: PullKey; reviewId: number }
  /** A commit on the default branch reverts `reverted`. */
  | { kind: 'revert'; where: Where; reverted: string; revertCommit: string; at: Date }
  /** CI finished on `commit` (a merge commit, perhaps). */
  | { kind: 'ci'; where: Where; commit: string; conclusion: string; at: Date };

const whereOf = (p: { repository: z.infer<typeof Repository> }): Where => ({
  owner: p.repository.owner.login,
  repo: p.repository.name,
});

/**
 * The outcome signals in a GitHub webhook, from its payload alone (pure, table-tested): a PR
 * closed (merged or not), a push (people's commits on a branch, reverts on the default branch), a
 * person's review, CI finishing on a commit (check suite, check run, workflow run, commit status).
 * Deliveries not from the App (no installation) say nothing.
 */
export function classifyOutcome(event: string, payload: unknown, bot: BotIdentity): OutcomeSignal[] {
  switch (event) {
    case 'pull_request': {
      const p = PullClosedEvent.safeParse(payload);
      if (!p.success) return [];
      const pr = p.data.pull_request;
      const merged = pr.merged === true;
      const at = new Date((merged ? pr.merged_at : pr.closed_at) ?? pr.closed_at ?? Date.now());
      const by = (merged ? pr.merged_by?.login : undefined) ?? p.data.sender.login;
      const mergeCommit = merged && pr.merge_commit_sha ? { mergeCommit: pr.merge_commit_sha } : {};
      return [
        {
          kind: 'finished',
          pull: { ...whereOf(p.data), number: pr.number, state: merged ? 'merged' : 'closed', at, by, ...mergeCommit },
        },
      ];
    }
    case 'push':
      return pushSignals(payload, bot);
    case 'pull_request_review': {
      const p = ReviewEvent.safeParse(payload);
      if (!p.success || isBot(p.data.review.user, bot)) return [];
      return [
        {
          kind: 'review',
          pull: { ...whereOf(p.data), number: p.data.pull_request.number },
          reviewId: p.data.review.id,
        },
      ];
    }
    case 'check_suite':
    case 'check_run':
    case 'workflow_run': {
      const p = CheckEvent.safeParse(payload);
      const done = p.success ? (p.data.check_suite ?? p.data.check_run ?? p.data.workflow_run) : undefined;
      if (!p.success || !done?.conclusion) return [];
      return [
        {
          kind: 'ci',
          where: whereOf(p.data),
          commit: done.head_sha,
          conclusion: done.conclusion,
          at: new Date(done.updated_at ?? Date.now()),
        },
      ];
    }
    case 'status': {
      const p = StatusEvent.safeParse(payload);
      if (!p.success || p.data.state === 'pending') return [];
      return [
        {
          kind: 'ci',
          where: whereOf(p.data),
          commit: p.data.sha,
          conclusion: p.data.state === 'error' ? 'failure' : p.data.state,
          at: new Date(p.data.updated_at ?? Date.now()),
        },
      ];
    }
    default:
      return [];
  }
}

function pushSignals(payload: unknown, bot: BotIdentity): OutcomeSignal[] {
  const p = PushEvent.safeParse(payload);
  if (!p.success || !p.data.ref.startsWith('refs/heads/')) return [];
  const where = whereOf(p.data);
  const branch = p.data.ref.slice('refs/heads/'.length);
  const signals: OutcomeSignal[] = [];
  if (branch === p.data.repository.default_branch) {
    for (const commit of p.data.commits) {
      const reverted = revertedCommit(commit.message);
      if (reverted)
        signals.push({ kind: 'revert', where, reverted, revertCommit: commit.id, at: new Date(commit.timestamp) });
    }
  }
  if (!isBot(p.data.sender, bot) && p.data.commits.length > 0)
    signals.push({ kind: 'human-commits', where, branch, shas: p.data.commits.map((c) => c.id) });
  return signals;
}
