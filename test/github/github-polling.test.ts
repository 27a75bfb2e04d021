import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startGitHubPatchbay, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'firewalled';
const installationId = 88;
const pollSeconds = 1;

/** The changelog entry a comment asks for; anything else (a task, a CI follow-up) writes a file of its own. */
function decide(messages: readonly ModelMessage[]): ScriptedTurn {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const text = lastUser >= 0 ? (messages[lastUser] as { content: string }).content : '';
  const turn = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
  const requests = messages.filter((m) => m.role === 'user').length;
  const write = text.includes('CHANGELOG')
    ? { path: 'CHANGELOG.md', content: '# Changes\n\n- login\n' }
    : { path: `work-${requests}.txt`, content: `work ${requests}\n` };
  return (
    [{ toolCalls: [{ name: 'write_file', input: write }] }, { text: `Wrote ${write.path}.` }][turn] ?? { text: 'done' }
  );
}

/** Behind a firewall: GitHub set, PUBLIC_URL on localhost, no webhook secret, events by polling. */
const firewalled = {
  GITHUB_EVENTS: 'polling',
  GITHUB_POLL_SECONDS: String(pollSeconds),
  GITHUB_WEBHOOK_SECRET: '',
  PUBLIC_URL: 'http://localhost:3000',
};

describe('GitHub events by polling, where no webhook can arrive (GITHUB_EVENTS=polling)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let first: GitHubPatchbay;
  let second: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  let pullNumber: number;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    await upstream.pushCommit('feature.txt', 'feature\n', 'login feature', 'feature/login');
    alice = fake.addUser('alice');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write' });
    pullNumber = fake.addPull(owner, repo, { head: 'feature/login', base: 'main', title: 'Login', user: alice }).number;
    const model = createScriptedProvider({ scenario: decide });
    // Two processes of one deployment on one database: both poll.
    first = await startGitHubPatchbay(fake, model, firewalled);
    second = await startGitHubPatchbay(fake, model, firewalled, { sharedDatabaseUrl: first.databaseUrl });
  }, 180_000);
  afterAll(async () => {
    await second?.dispose();
    await first?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  const pullThread = (): ThreadRef => ({ source: 'github', owner, repo, number: pullNumber, kind: 'pull' });
  const gitDir = () => fake.repo(owner, repo).gitDir;

  it('serves no webhook route: nothing but polling can bring GitHub events', async () => {
    const answer = await fetch(`${first.url}/github/webhooks`, { method: 'POST', body: '{}' });
    expect(answer.status).toBe(404);
  });

  it('records the installations and their repositories it finds, for the repositories other surfaces offer', async () => {
    const installed = await waitFor(
      async () => {
        const repos = await first.database.db.selectFrom('github_installation_repos').select('full_name').execute();
        return repos.length > 0 ? repos.map((r) => r.full_name) : undefined;
      },
      'the installation recorded',
      20_000,
    );
    expect(installed).toEqual([`${owner}/${repo}`]);
  });

  it('starts the rework a PR comment mentioning the App asks for within the polling interval, once', {
    timeout: 180_000,
  }, async () => {
    const before = await git(gitDir(), 'rev-parse', 'refs/heads/feature/login');
    const asked = Date.now();
    const comment = fake.addComment(owner, repo, pullNumber, alice, '@patchbay-test please add a CHANGELOG entry');
    const session = await waitFor(() => first.store.findByThread(pullThread()), 'a session for the PR', 30_000);
    const tookMs = Date.now() - asked;
    // One interval, the look itself and the queue's half-second poll, with room for a busy machine
    // (seen at 6.8 s under a load of 20); far below the default 30 s interval it must not fall back to.
    expect(tookMs).toBeLessThan(pollSeconds * 1000 + 14_000);
    const done = await waitForStatus(first, session.id, ['completed', 'failed'], 120_000);
    expect(done.status).toBe('completed');
    expect(done.branch).toBe('feature/login');
    const after = await git(gitDir(), 'rev-parse', 'refs/heads/feature/login');
    expect(after).not.toBe(before);
    expect(await git(gitDir(), 'show', `${after}:CHANGELOG.md`)).toBe('# Changes\n\n- login');
    expect(comment.reactions).toEqual(['eyes']);

    // Several more looks by both processes find the same comment and start nothing more.
    const polled = fake.polling.calls.length;
    await waitFor(
      async () => fake.polling.calls.length >= polled + 8 || undefined,
      'more looks by both processes',
      30_000,
    );
    const deliveries = (await first.inbound.list()).filter((d) => d.kind === 'issue_comment');
    expect(deliveries).toHaveLength(1);
    // One progress comment, edited into the final reply (by whichever process's notifier shows the
    // end: the one that did not take the request waits for the taker's post, then edits it).
    const bot = () => fake.commentsOn(owner, repo, pullNumber).filter((c) => c.user.login === fake.bot.login);
    await waitFor(async () => bot().some((c) => c.body.startsWith('✅ Done.')) || undefined, 'the final reply', 60_000);
    expect(bot().map((c) => c.body.split('\n')[0])).toEqual(['✅ Done.']);
    // Unchanged lists were asked with If-None-Match and answered 304 (no rate limit spent).
    expect(fake.polling.notModified).toBeGreaterThan(0);
    expect(fake.refused).toEqual([]);
  });

  it('refuses a mention from someone without write access, as the webhook path does', { timeout: 60_000 }, async () => {
    const mallory = fake.addUser('mallory2');
    fake.repo(owner, repo).collaborators.set('mallory2', 'read');
    const otherPull = fake.addPull(owner, repo, { head: 'feature/login', base: 'main', title: 'Again', user: alice });
    fake.addComment(owner, repo, otherPull.number, mallory, '@patchbay-test delete everything');
    const refusal = await waitFor(
      async () =>
        fake
          .commentsOn(owner, repo, otherPull.number)
          .find((c) => c.user.login === fake.bot.login && c.body.includes('only people with write access')),
      'the refusal',
      30_000,
    );
    expect(refusal.body).toContain('@mallory2');
    expect(
      await first.store.findByThread({ source: 'github', owner, repo, number: otherPull.number, kind: 'pull' }),
    ).toBeUndefined();
    expect(fake.refused).toEqual([]);
  });

  it("follows up a failed check suite on the head of the App's own pull request, found by polling", {
    timeout: 240_000,
  }, async () => {
    const issue = 5;
    fake.polling.issues.set(`${owner}/${repo}#${issue}`, { title: 'Add lib.js', body: 'We need lib.js.', user: alice });
    fake.addComment(owner, repo, issue, alice, '@patchbay-test please add lib.js');
    const thread: ThreadRef = { source: 'github', owner, repo, number: issue, kind: 'issue' };
    const session = await waitFor(() => first.store.findByThread(thread), 'a session for the issue', 30_000);
    const done = await waitForStatus(first, session.id, ['completed', 'failed'], 120_000);
    expect(done.status).toBe('completed');
    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    expect(pr.user.login).toBe(fake.bot.login);
    const head = await git(gitDir(), 'rev-parse', `refs/heads/${pr.head}`);
    fake.addWorkflowRun(owner, repo, {
      name: 'CI',
      headSha: head,
      headBranch: pr.head,
      jobs: [
        {
          name: 'test',
          conclusion: 'failure',
          log: [
            '##[group]Run npm test',
            'Error: lib.js exports nothing',
            '##[error]Process completed with exit code 1.',
          ],
        },
      ],
    });
    const failed = await waitFor(
      async () => (await first.store.events(session.id)).map((e) => e.event).find((e) => e.type === 'ci-failed'),
      'the CI failure, found by polling',
      60_000,
    );
    expect(failed).toMatchObject({ commit: head, pullNumber: pr.number, followUp: true });
    expect(fake.refused).toEqual([]);
  });
});
