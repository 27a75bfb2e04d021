import { createHmac, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
type Definition = { name: string; examples: Record<string, unknown>[] };
const definitions = require('@octokit/webhooks-examples/api.github.com/index.json') as Definition[];

/** A deep copy of GitHub's published example for `event` with `action` (@octokit/webhooks-examples). */
export function example(event: string, action: string, index = 0): Record<string, any> {
  const found = definitions.find((d) => d.name === event)?.examples.filter((e) => e.action === action)[index];
  if (!found) throw new Error(`@octokit/webhooks-examples has no ${event}.${action} example #${index}`);
  return structuredClone(found) as Record<string, any>;
}

type User = { login: string; id: number; type: string };
type Where = { owner: string; repo: string; installationId: number };

/** Points an example at our repository and installation (App deliveries always carry `installation`). */
function place(payload: Record<string, any>, where: Where, sender: User): Record<string, any> {
  payload.repository = {
    ...payload.repository,
    name: where.repo,
    full_name: `${where.owner}/${where.repo}`,
    owner: { ...payload.repository.owner, login: where.owner },
  };
  payload.sender = { ...payload.sender, ...sender };
  payload.installation = { id: where.installationId, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' };
  return payload;
}

/**
 * issue_comment.created on a pull request. Derived from the published issue_comment.created
 * example #0: none of the examples is on a PR, so `issue.pull_request` is added (as GitHub sends it).
 */
export function prCommentEvent(where: Where, input: { number: number; commentId: number; user: User; body: string }) {
  const p = place(example('issue_comment', 'created'), where, input.user);
  p.issue = {
    ...p.issue,
    number: input.number,
    html_url: `https://github.com/${where.owner}/${where.repo}/pull/${input.number}`,
    pull_request: {
      url: `https://api.github.com/repos/${where.owner}/${where.repo}/pulls/${input.number}`,
      html_url: `https://github.com/${where.owner}/${where.repo}/pull/${input.number}`,
      diff_url: '',
      patch_url: '',
      merged_at: null,
    },
  };
  p.comment = { ...p.comment, id: input.commentId, body: input.body, user: { ...p.comment.user, ...input.user } };
  return p;
}

/** issue_comment.created on an issue: the published example #0 with our repo, user and text. */
export function issueCommentEvent(
  where: Where,
  input: {
    number: number;
    title: string;
    body: string;
    commentId: number;
    user: User;
    comment: string;
    issueAuthor?: User;
  },
) {
  const p = place(example('issue_comment', 'created'), where, input.user);
  p.issue = {
    ...p.issue,
    number: input.number,
    title: input.title,
    body: input.body,
    ...(input.issueAuthor && { user: { ...p.issue.user, ...input.issueAuthor } }),
  };
  delete p.issue.pull_request;
  p.comment = { ...p.comment, id: input.commentId, body: input.comment, user: { ...p.comment.user, ...input.user } };
  return p;
}

/** pull_request_review_comment.created: the published example #0 with our PR, comment and hunk. */
export function reviewCommentEvent(
  where: Where,
  input: {
    number: number;
    head: string;
    base: string;
    commentId: number;
    user: User;
    body: string;
    path: string;
    line: number;
    diffHunk: string;
    headRepo?: string;
  },
) {
  const p = place(example('pull_request_review_comment', 'created'), where, input.user);
  p.comment = {
    ...p.comment,
    id: input.commentId,
    body: input.body,
    user: { ...p.comment.user, ...input.user },
    path: input.path,
    line: input.line,
    diff_hunk: input.diffHunk,
  };
  delete p.comment.in_reply_to_id;
  p.pull_request = {
    ...p.pull_request,
    number: input.number,
    head: {
      ...p.pull_request.head,
      ref: input.head,
      repo: { ...p.pull_request.head.repo, full_name: input.headRepo ?? `${where.owner}/${where.repo}` },
    },
    base: {
      ...p.pull_request.base,
      ref: input.base,
      repo: { ...p.pull_request.base.repo, full_name: `${where.owner}/${where.repo}` },
    },
  };
  return p;
}

/** installation.created: the published example with our installation id and repositories. */
export function installationCreatedEvent(
  installationId: number,
  account: string,
  repos: { id: number; full_name: string }[],
) {
  const p = example('installation', 'created');
  p.installation = {
    ...p.installation,
    id: installationId,
    account: { ...p.installation.account, login: account },
    repository_selection: 'selected',
  };
  p.repositories = repos.map((r) => ({
    id: r.id,
    node_id: 'x',
    name: r.full_name.split('/')[1],
    full_name: r.full_name,
    private: false,
  }));
  return p;
}

/** installation_repositories.removed: the published example with our installation and repository. */
export function installationReposRemovedEvent(
  installationId: number,
  account: string,
  removed: { id: number; full_name: string }[],
) {
  const p = example('installation_repositories', 'removed');
  p.installation = { ...p.installation, id: installationId, account: { ...p.installation.account, login: account } };
  p.repositories_added = [];
  p.repositories_removed = removed.map((r) => ({
    id: r.id,
    node_id: 'x',
    name: r.full_name.split('/')[1],
    full_name: r.full_name,
    private: false,
  }));
  return p;
}

/** Posts a delivery the way GitHub does: the headers, and the body signed with the webhook secret. */
export async function sendWebhook(
  url: string,
  secret: string,
  event: string,
  payload: unknown,
  options: { deliveryId?: string; signature?: string } = {},
) {
  const body = JSON.stringify(payload);
  const deliveryId = options.deliveryId ?? randomUUID();
  const signature = options.signature ?? `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/fake',
      'x-github-event': event,
      'x-github-delivery': deliveryId,
      'x-github-hook-id': '1',
      'x-github-hook-installation-target-type': 'integration',
      'x-github-hook-installation-target-id': '4242',
      'x-hub-signature-256': signature,
    },
    body,
  });
  return { status: response.status, text: await response.text(), deliveryId };
}

type Run = {
  id: number;
  name: string;
  headSha: string;
  headBranch: string;
  checkSuiteId: number;
  jobs: { id: number; name: string; conclusion: string }[];
};
const pullRef = (where: Where, number: number, run: { headSha: string; headBranch: string }) => ({
  url: `https://api.github.com/repos/${where.owner}/${where.repo}/pulls/${number}`,
  id: number + 50_000,
  number,
  head: {
    ref: run.headBranch,
    sha: run.headSha,
    repo: { id: 1, url: `https://api.github.com/repos/${where.owner}/${where.repo}`, name: where.repo },
  },
  base: {
    ref: 'main',
    sha: '0'.repeat(40),
    repo: { id: 1, url: `https://api.github.com/repos/${where.owner}/${where.repo}`, name: where.repo },
  },
});
const sender = { login: 'github-actions[bot]', id: 41898282, type: 'Bot' };

/**
 * workflow_run.completed: the published example #0 (a run that had not finished yet, conclusion
 * null) with our run's ids, head and conclusion, and the pull request GitHub lists for the head.
 */
export function workflowRunCompletedEvent(where: Where, input: { run: Run; pullNumber: number; conclusion?: string }) {
  const p = place(example('workflow_run', 'completed'), where, sender);
  const { run } = input;
  p.workflow = { ...p.workflow, name: run.name };
  p.workflow_run = {
    ...p.workflow_run,
    id: run.id,
    name: run.name,
    head_sha: run.headSha,
    head_branch: run.headBranch,
    head_commit: { ...p.workflow_run.head_commit, id: run.headSha },
    check_suite_id: run.checkSuiteId,
    status: 'completed',
    conclusion: input.conclusion ?? 'failure',
    html_url: `https://github.com/${where.owner}/${where.repo}/actions/runs/${run.id}`,
    pull_requests: [pullRef(where, input.pullNumber, run)],
  };
  return p;
}

/** check_run.completed: the published failure example (#0 of completed) for one of our run's jobs (an Actions check run's id is the job's id). */
export function checkRunCompletedEvent(
  where: Where,
  input: { run: Run; job: { id: number; name: string; conclusion: string }; pullNumber: number },
) {
  const p = place(example('check_run', 'completed'), where, sender);
  const { run, job } = input;
  p.check_run = {
    ...p.check_run,
    id: job.id,
    name: job.name,
    head_sha: run.headSha,
    conclusion: job.conclusion,
    html_url: `https://github.com/${where.owner}/${where.repo}/runs/${job.id}`,
    check_suite: {
      ...p.check_run.check_suite,
      id: run.checkSuiteId,
      head_sha: run.headSha,
      head_branch: run.headBranch,
      pull_requests: [pullRef(where, input.pullNumber, run)],
    },
    pull_requests: [pullRef(where, input.pullNumber, run)],
  };
  return p;
}

/** check_suite.completed: the published example #0 (conclusion success) with our suite, head and conclusion. */
export function checkSuiteCompletedEvent(where: Where, input: { run: Run; pullNumber: number; conclusion?: string }) {
  const p = place(example('check_suite', 'completed'), where, sender);
  const { run } = input;
  p.check_suite = {
    ...p.check_suite,
    id: run.checkSuiteId,
    head_sha: run.headSha,
    head_branch: run.headBranch,
    after: run.headSha,
    conclusion: input.conclusion ?? 'failure',
    app: { ...p.check_suite.app, slug: 'github-actions' },
    pull_requests: [pullRef(where, input.pullNumber, run)],
  };
  return p;
}

/** pull_request.closed: the published example #0 (closed, not merged) with our PR, its body and who closed it. */
export function pullRequestClosedEvent(
  where: Where,
  input: {
    pull: { number: number; title: string; body: string; head: string; base: string };
    user: User;
    merged?: boolean;
  },
) {
  const p = place(example('pull_request', 'closed'), where, input.user);
  p.number = input.pull.number;
  p.pull_request = {
    ...p.pull_request,
    number: input.pull.number,
    title: input.pull.title,
    body: input.pull.body,
    state: 'closed',
    merged: input.merged ?? false,
    head: { ...p.pull_request.head, ref: input.pull.head },
    base: { ...p.pull_request.base, ref: input.pull.base },
  };
  return p;
}

/** pull_request.synchronize: the published example #0 with our PR (its node id, draft state and new head) and who pushed. */
export function pullRequestSynchronizeEvent(
  where: Where,
  input: {
    pull: { number: number; title: string; body: string; head: string; headSha: string; draft: boolean };
    user: User;
  },
) {
  const p = place(example('pull_request', 'synchronize'), where, input.user);
  p.number = input.pull.number;
  p.pull_request = {
    ...p.pull_request,
    number: input.pull.number,
    node_id: `PR_kw${input.pull.number}`,
    title: input.pull.title,
    body: input.pull.body,
    draft: input.pull.draft,
    head: { ...p.pull_request.head, ref: input.pull.head, sha: input.pull.headSha },
  };
  p.after = input.pull.headSha;
  return p;
}
