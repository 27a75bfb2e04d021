import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FakeGitHub } from './fake-github.ts';
import { example, pullRequestClosedEvent, sendWebhook } from './fake-github-webhooks.ts';

const run = promisify(execFile);

type User = { login: string; id: number; type: string };
type Where = { owner: string; repo: string; installationId: number };
type Pull = FakeGitHub['pulls'][number];

/** Runs git as `who` in a scratch clone (their name is the author and committer). */
function gitAs(who: User) {
  const email = `${who.id}+${who.login}@users.noreply.github.com`;
  const env = {
    PATH: '/usr/bin:/bin',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: who.login,
    GIT_AUTHOR_EMAIL: email,
    GIT_COMMITTER_NAME: who.login,
    GIT_COMMITTER_EMAIL: email,
  };
  return async (cwd: string, ...args: string[]) =>
    (await run('git', ['-c', 'protocol.file.allow=always', ...args], { cwd, env })).stdout.trim();
}

/** The push example that pushed a commit to a branch, our repository's, with our commits. */
function pushEvent(
  where: Where,
  input: {
    branch: string;
    defaultBranch: string;
    before: string;
    commits: { id: string; message: string; by: User }[];
    sender: User;
  },
) {
  const p = example('push', undefined as unknown as string, 4);
  const template = p.commits[0];
  p.ref = `refs/heads/${input.branch}`;
  p.before = input.before;
  p.after = input.commits.at(-1)!.id;
  p.created = false;
  p.base_ref = null;
  p.repository = {
    ...p.repository,
    name: where.repo,
    full_name: `${where.owner}/${where.repo}`,
    owner: { ...p.repository.owner, login: where.owner, name: where.owner },
    default_branch: input.defaultBranch,
    master_branch: input.defaultBranch,
  };
  p.installation = { id: where.installationId, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' };
  p.sender = { ...p.sender, ...input.sender };
  p.pusher = { name: input.sender.login, email: `${input.sender.id}+${input.sender.login}@users.noreply.github.com` };
  p.commits = input.commits.map((c) => {
    const author = {
      name: c.by.login,
      email: `${c.by.id}+${c.by.login}@users.noreply.github.com`,
      username: c.by.login,
    };
    return {
      ...template,
      id: c.id,
      tree_id: c.id,
      message: c.message,
      timestamp: new Date().toISOString(),
      url: `https://github.com/${where.owner}/${where.repo}/commit/${c.id}`,
      author,
      committer: author,
    };
  });
  p.head_commit = p.commits.at(-1);
  return p;
}

/**
 * What people do on GitHub to a pull request after Patchbay opened it, done for real on the fake's
 * repository (git merges and reverts in a scratch clone, pushed back), each followed by the
 * webhooks GitHub sends the App for it, signed, built from GitHub's published examples:
 * pull_request.closed (merged or not), push, pull_request_review.submitted, status.
 */
export function pullActions(fake: FakeGitHub, hook: { url: () => string; secret: string }, where: Where) {
  const deliver = async (event: string, payload: unknown) => {
    const sent = await sendWebhook(hook.url(), hook.secret, event, payload);
    if (sent.status !== 202) throw new Error(`the ${event} webhook was refused: ${sent.status} ${sent.text}`);
  };
  const pullOf = (number: number): Pull =>
    fake.pulls.find((p) => p.repo === `${where.owner}/${where.repo}`.toLowerCase() && p.number === number)!;
  /** Runs `change` in a scratch clone of the repository, then pushes `branch` back. */
  async function inClone<T>(
    who: User,
    branch: string,
    change: (git: ReturnType<typeof gitAs>, dir: string) => Promise<T>,
  ): Promise<T> {
    const dir = await mkdtemp(join(tmpdir(), 'fake-github-clone-'));
    const git = gitAs(who);
    try {
      await git(dir, 'clone', '--quiet', fake.repo(where.owner, where.repo).gitDir, '.');
      await git(dir, 'checkout', '--quiet', branch);
      const result = await change(git, dir);
      await git(dir, 'push', '--quiet', 'origin', branch);
      return result;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const tip = async (branch: string) =>
    (
      await run('git', ['--git-dir', fake.repo(where.owner, where.repo).gitDir, 'rev-parse', `refs/heads/${branch}`])
    ).stdout.trim();

  return {
    /** Merges the PR with a merge commit (GitHub's "Create a merge commit"), as `by`: the closed webhook, then the push to the base. */
    async merge(number: number, by: User): Promise<string> {
      const pull = pullOf(number);
      const before = await tip(pull.base);
      const message = `Merge pull request #${number} from ${where.owner}/${pull.head}`;
      const sha = await inClone(by, pull.base, async (git, dir) => {
        await git(dir, 'merge', '--quiet', '--no-ff', '-m', message, `origin/${pull.head}`);
        return git(dir, 'rev-parse', 'HEAD');
      });
      pull.state = 'closed';
      pull.merged = { sha, by: { login: by.login, id: by.id, type: 'User' }, at: new Date().toISOString() };
      pull.closedAt = pull.merged.at;
      const closed = pullRequestClosedEvent(where, { pull, user: by, merged: true });
      closed.pull_request = {
        ...closed.pull_request,
        merged_at: pull.merged.at,
        closed_at: pull.closedAt,
        merge_commit_sha: sha,
        merged_by: { ...closed.pull_request.user, login: by.login, id: by.id, type: 'User' },
      };
      await deliver('pull_request', closed);
      await deliver(
        'push',
        pushEvent(where, {
          branch: pull.base,
          defaultBranch: pull.base,
          before,
          commits: [{ id: sha, message, by }],
          sender: by,
        }),
      );
      return sha;
    },
    /** Closes the PR without merging it, as `by`. */
    async close(number: number, by: User): Promise<void> {
      const pull = fake.closePull(where.owner, where.repo, number);
      const closed = pullRequestClosedEvent(where, { pull, user: by });
      closed.pull_request = {
        ...closed.pull_request,
        closed_at: pull.closedAt,
        merged_at: null,
        merge_commit_sha: null,
        merged_by: null,
      };
      await deliver('pull_request', closed);
    },
    /** `git revert -m 1 <merge>` on the default branch, pushed by `by`: git's own "Revert …" message. */
    async revertMerge(mergeSha: string, branch: string, by: User): Promise<string> {
      const before = await tip(branch);
      const { sha, message } = await inClone(by, branch, async (git, dir) => {
        await git(dir, 'revert', '--no-edit', '-m', '1', mergeSha);
        return { sha: await git(dir, 'rev-parse', 'HEAD'), message: await git(dir, 'log', '-1', '--format=%B') };
      });
      await deliver(
        'push',
        pushEvent(where, { branch, defaultBranch: branch, before, commits: [{ id: sha, message, by }], sender: by }),
      );
      return sha;
    },
    /** A person commits a file to the PR's branch and pushes it. */
    async pushToPull(number: number, by: User, file: string): Promise<string> {
      const pull = pullOf(number);
      const before = await tip(pull.head);
      const message = `Tweak ${file}`;
      const sha = await inClone(by, pull.head, async (git, dir) => {
        await writeFile(join(dir, file), `${by.login} was here\n`);
        await git(dir, 'add', file);
        await git(dir, 'commit', '--quiet', '-m', message);
        return git(dir, 'rev-parse', 'HEAD');
      });
      await deliver(
        'push',
        pushEvent(where, {
          branch: pull.head,
          defaultBranch: pull.base,
          before,
          commits: [{ id: sha, message, by }],
          sender: by,
        }),
      );
      return sha;
    },
    /** A person submits a review (the published submitted example with our PR and reviewer). */
    async review(number: number, by: User, state: 'approved' | 'changes_requested' | 'commented'): Promise<void> {
      const pull = pullOf(number);
      const id = fake.nextId();
      const submittedAt = new Date().toISOString();
      pull.reviews ??= [];
      pull.reviews.push({
        id,
        user: { login: by.login, id: by.id, type: 'User' },
        state: state.toUpperCase(),
        body: 'Looks fine.',
        submittedAt,
      });
      const p = example('pull_request_review', 'submitted');
      p.repository = {
        ...p.repository,
        name: where.repo,
        full_name: `${where.owner}/${where.repo}`,
        owner: { ...p.repository.owner, login: where.owner },
      };
      p.installation = { id: where.installationId, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' };
      p.sender = { ...p.sender, login: by.login, id: by.id, type: 'User' };
      p.review = {
        ...p.review,
        id,
        state,
        body: 'Looks fine.',
        submitted_at: submittedAt,
        user: { ...p.review.user, login: by.login, id: by.id, type: 'User' },
      };
      p.pull_request = {
        ...p.pull_request,
        number,
        body: pull.body,
        head: { ...p.pull_request.head, ref: pull.head },
        base: { ...p.pull_request.base, ref: pull.base },
      };
      await deliver('pull_request_review', p);
    },
    /** A commit status (CI on the default branch, say) reported on `sha`. */
    async status(sha: string, branch: string, state: 'success' | 'failure'): Promise<void> {
      const p = example('status', undefined as unknown as string, 0);
      p.repository = {
        ...p.repository,
        name: where.repo,
        full_name: `${where.owner}/${where.repo}`,
        owner: { ...p.repository.owner, login: where.owner },
      };
      p.installation = { id: where.installationId, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' };
      p.sha = sha;
      p.state = state;
      p.context = 'ci/build';
      p.branches = [{ name: branch, commit: { sha, url: '' }, protected: true }];
      p.commit = { ...p.commit, sha };
      p.updated_at = new Date().toISOString();
      await deliver('status', p);
    },
  };
}
