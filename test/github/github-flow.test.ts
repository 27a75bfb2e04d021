import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { deliveriesWorked, waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import {
  installationCreatedEvent,
  installationReposRemovedEvent,
  issueCommentEvent,
  prCommentEvent,
  reviewCommentEvent,
  sendWebhook,
} from '../fakes/fake-github-webhooks.ts';
import { filesContaining, startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const pushScript = [
  'git commit --allow-empty -qm rewrite',
  'git push --force origin HEAD:main 2>&1; echo "force rc=$?"',
  'git push origin HEAD:refs/heads/main 2>&1; echo "main rc=$?"',
  'git push --force https://github.com/octo-org/demo HEAD:main 2>&1; echo "direct rc=$?"',
  '',
].join('\n');

/** The model's move from the latest request it was given (the last user message) and its turns since. */
function decide(messages: readonly ModelMessage[]): ScriptedTurn {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const text = lastUser >= 0 ? (messages[lastUser] as { content: string }).content : '';
  const turn = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant').length;
  if (text.includes('CHANGELOG')) {
    return (
      [
        {
          text: 'Adding the changelog.',
          toolCalls: [{ name: 'write_file', input: { path: 'CHANGELOG.md', content: '# Changes\n\n- login\n' } }],
        },
        { text: 'Added CHANGELOG.md with an entry for the login feature.' },
      ][turn] ?? { text: 'done' }
    );
  }
  if (text.includes('hunk')) {
    return (
      [
        { toolCalls: [{ name: 'write_file', input: { path: 'feature.txt', content: 'feature, reviewed\n' } }] },
        { text: 'Reworded feature.txt as the review asked.' },
      ][turn] ?? { text: 'done' }
    );
  }
  if (text.includes('force')) {
    return (
      [
        { toolCalls: [{ name: 'run_shell', input: { command: 'git push --force origin HEAD:main' } }] },
        // Past the command policy, through a script: the sandbox itself has no route and no token.
        { toolCalls: [{ name: 'write_file', input: { path: 'push.sh', content: pushScript } }] },
        { toolCalls: [{ name: 'run_shell', input: { command: 'sh push.sh; rm push.sh' } }] },
        {
          toolCalls: [
            {
              name: 'run_shell',
              input: {
                command: 'env; git config --list --show-origin; cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " "',
              },
            },
          ],
        },
        { toolCalls: [{ name: 'write_file', input: { path: 'fix.txt', content: 'fixed\n' } }] },
        { toolCalls: [{ name: 'run_shell', input: { command: 'cat fix.txt' } }] },
        { text: 'Fixed the issue by adding fix.txt; checked it with cat.' },
      ][turn] ?? { text: 'done' }
    );
  }
  if (text.includes('where is the title')) {
    return (
      [
        { toolCalls: [{ name: 'write_file', input: { path: 'README.md', content: 'changed\n' } }] },
        { text: 'The title is the first line of `README.md:1`.' },
      ][turn] ?? { text: 'done' }
    );
  }
  return { text: 'Nothing to do.' };
}

const owner = 'octo-org';
const repo = 'demo';
const installationId = 77;

describe('GitHub end to end (fake GitHub with the REST spec and git http-backend, real Patchbay)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  let rob: ReturnType<FakeGitHub['addUser']>;
  let pullNumber: number;
  let firstDelivery: { payload: unknown; deliveryId: string };
  const where = { owner, repo, installationId };
  const model = createScriptedProvider({ scenario: decide });

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    await upstream.pushCommit('feature.txt', 'feature\n', 'login feature', 'feature/login');
    alice = fake.addUser('alice');
    rob = fake.addUser('rob');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write', rob: 'read' });
    pullNumber = fake.addPull(owner, repo, { head: 'feature/login', base: 'main', title: 'Login', user: alice }).number;
    app = await startGitHubPatchbay(fake, model);
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  const gitDir = () => fake.repo(owner, repo).gitDir;
  const tip = (branch: string) => git(gitDir(), 'rev-parse', `refs/heads/${branch}`).catch(() => '');
  const pullThread = (): ThreadRef => ({ source: 'github', owner, repo, number: pullNumber, kind: 'pull' });
  const webhooks = () => `${app.url}/github/webhooks`;

  it('refuses a delivery with a bad signature with 401 and nothing else', async () => {
    const payload = prCommentEvent(where, { number: pullNumber, commentId: 1, user: alice, body: '@patchbay-test hi' });
    const sent = await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload, {
      signature: `sha256=${'0'.repeat(64)}`,
    });
    expect(sent.status).toBe(401);
    expect(sent.text).toBe('');
    const rows = await app.database.db.selectFrom('inbound_deliveries').select('delivery_id').execute();
    expect(rows).toEqual([]);
  });

  it('records installations and their repositories from installation events', async () => {
    const created = installationCreatedEvent(installationId, owner, [
      { id: 501, full_name: `${owner}/${repo}` },
      { id: 502, full_name: `${owner}/other` },
    ]);
    expect((await sendWebhook(webhooks(), webhookSecret, 'installation', created)).status).toBe(202);
    // Sent back to back: the pipeline works one installation's events in the order they came.
    const removed = installationReposRemovedEvent(installationId, owner, [{ id: 502, full_name: `${owner}/other` }]);
    expect((await sendWebhook(webhooks(), webhookSecret, 'installation_repositories', removed)).status).toBe(202);
    await waitFor(async () => {
      const deliveries = (await app.inbound.list()).filter((d) => d.kind.startsWith('installation'));
      return deliveries.length === 2 && deliveries.every((d) => d.status !== 'pending');
    }, 'both installation deliveries worked');
    const rows = await app.database.db
      .selectFrom('github_installation_repos')
      .select('full_name')
      .where('installation_id', '=', installationId)
      .execute();
    const repos = rows.map((r) => r.full_name);
    expect(repos).toEqual([`${owner}/${repo}`]);
  });

  it("turns a collaborator's PR comment into a commit on the PR branch and a reply on the PR", async () => {
    const before = await tip('feature/login');
    const comment = fake.addComment(owner, repo, pullNumber, alice, '@patchbay-test please add a CHANGELOG entry');
    const payload = prCommentEvent(where, {
      number: pullNumber,
      commentId: comment.id,
      user: alice,
      body: comment.body,
    });
    const sent = await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload);
    expect(sent.status).toBe(202);
    firstDelivery = { payload, deliveryId: sent.deliveryId };

    const session = await waitFor(() => app.store.findByThread(pullThread()), 'a session for the PR');
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 60_000);
    expect(done.status).toBe('completed');
    expect(done.branch).toBe('feature/login');

    const after = await tip('feature/login');
    expect(after).not.toBe(before);
    expect(await git(gitDir(), 'rev-parse', `${after}~1`)).toBe(before);
    expect(await git(gitDir(), 'show', `${after}:CHANGELOG.md`)).toBe('# Changes\n\n- login');
    expect(await git(gitDir(), 'log', '-1', '--format=%an <%ae>', after)).toBe(
      `alice <${alice.id}+alice@users.noreply.github.com>`,
    );

    expect(comment.reactions).toEqual(['eyes']);
    const reply = await waitFor(
      async () =>
        fake
          .commentsOn(owner, repo, pullNumber)
          .find((c) => c.user.login === fake.bot.login && c.body.startsWith('✅')),
      'the final reply',
    );
    expect(reply.body).toContain(`http://patchbay.test/sessions/${session.id}`);
    expect(reply.body).toContain(`/pull/${pullNumber}`);
    expect(reply.body).toContain('Added CHANGELOG.md');
    // One progress comment per request, edited in place.
    expect(fake.commentsOn(owner, repo, pullNumber).filter((c) => c.user.login === fake.bot.login)).toHaveLength(1);
    // Someone else's PR keeps its description.
    expect(fake.pulls.find((p) => p.number === pullNumber)!.body).toBe('A human PR.');
    expect(fake.refused).toEqual([]);
  }, 90_000);

  it('does nothing new for a redelivered webhook', async () => {
    const session = (await app.store.findByThread(pullThread()))!;
    const commentsBefore = fake.commentsOn(owner, repo, pullNumber).length;
    const sent = await sendWebhook(webhooks(), webhookSecret, 'issue_comment', firstDelivery.payload, {
      deliveryId: firstDelivery.deliveryId,
    });
    expect(sent.status).toBe(200);
    await deliveriesWorked(app);
    expect((await app.store.get(session.id))!.lastSeq).toBe(session.lastSeq);
    expect(fake.commentsOn(owner, repo, pullNumber)).toHaveLength(commentsBefore);
  });

  it('answers a read-only user with a short refusal and runs nothing', async () => {
    const session = (await app.store.findByThread(pullThread()))!;
    const before = await tip('feature/login');
    const comment = fake.addComment(owner, repo, pullNumber, rob, '@patchbay-test please add a CHANGELOG entry');
    const sent = await sendWebhook(
      webhooks(),
      webhookSecret,
      'issue_comment',
      prCommentEvent(where, { number: pullNumber, commentId: comment.id, user: rob, body: comment.body }),
    );
    expect(sent.status).toBe(202);
    const refusal = await waitFor(
      async () => fake.commentsOn(owner, repo, pullNumber).find((c) => c.body.includes('@rob')),
      'the refusal',
    );
    expect(refusal.body).toMatch(/only people with write access/);
    expect(refusal.user.login).toBe(fake.bot.login);
    expect(comment.reactions).toEqual([]);
    expect((await app.store.get(session.id))!.lastSeq).toBe(session.lastSeq);
    expect(await tip('feature/login')).toBe(before);
  });

  it('answers "@bot stop" on a PR whose session is not running, and changes nothing', async () => {
    const session = (await app.store.findByThread(pullThread()))!;
    const comment = fake.addComment(owner, repo, pullNumber, alice, '@patchbay-test stop');
    const sent = await sendWebhook(
      webhooks(),
      webhookSecret,
      'issue_comment',
      prCommentEvent(where, { number: pullNumber, commentId: comment.id, user: alice, body: comment.body }),
    );
    expect(sent.status).toBe(202);
    const reply = await waitFor(
      async () => fake.commentsOn(owner, repo, pullNumber).find((c) => c.body.startsWith('@alice Nothing is running')),
      'the reply',
    );
    expect(reply.body).toBe(`@alice Nothing is running here (the session is ${session.status}).`);
    const after = (await app.store.get(session.id))!;
    expect(after.status).toBe(session.status);
    expect(await app.store.events(session.id, { afterSeq: session.lastSeq, types: ['user-message'] })).toEqual([]);
  });

  it('ignores its own comments and other bots', async () => {
    const session = (await app.store.findByThread(pullThread()))!;
    const botComment = fake.addComment(
      owner,
      repo,
      pullNumber,
      fake.bot,
      '@patchbay-test please add a CHANGELOG entry',
    );
    await sendWebhook(
      webhooks(),
      webhookSecret,
      'issue_comment',
      prCommentEvent(where, { number: pullNumber, commentId: botComment.id, user: fake.bot, body: botComment.body }),
    );
    await deliveriesWorked(app);
    expect(botComment.reactions).toEqual([]);
    expect((await app.store.get(session.id))!.lastSeq).toBe(session.lastSeq);
  });

  it('takes a review comment with its file, line and hunk, and replies in the review thread', async () => {
    const session = (await app.store.findByThread(pullThread()))!;
    const hunk = '@@ -0,0 +1 @@\n+feature';
    const comment = fake.addReviewComment(owner, repo, pullNumber, alice, {
      body: '@patchbay-test reword this line per the hunk',
      path: 'feature.txt',
      line: 1,
      diff_hunk: hunk,
    });
    const payload = reviewCommentEvent(where, {
      number: pullNumber,
      head: 'feature/login',
      base: 'main',
      commentId: comment.id,
      user: alice,
      body: comment.body,
      path: 'feature.txt',
      line: 1,
      diffHunk: hunk,
    });
    expect((await sendWebhook(webhooks(), webhookSecret, 'pull_request_review_comment', payload)).status).toBe(202);
    const reply = await waitFor(
      async () =>
        [...fake.reviewComments.values()].find((c) => c.in_reply_to_id === comment.id && c.body.startsWith('✅')),
      'the review-thread reply',
      60_000,
    );
    expect(reply.user.login).toBe(fake.bot.login);
    expect(comment.reactions).toEqual(['eyes']);
    expect(await git(gitDir(), 'show', 'refs/heads/feature/login:feature.txt')).toBe('feature, reviewed');
    const messages = (await app.store.events(session.id, { types: ['user-message'] })).map(
      (e) => (e.event as { text: string }).text,
    );
    expect(messages.at(-1)).toContain('Review comment on feature.txt, line 1:');
    expect(messages.at(-1)).toContain(hunk);
    expect(fake.refused).toEqual([]);
  }, 90_000);

  it('refuses a PR from a fork with a reply that says why', async () => {
    const forkPull = fake.addPull(owner, repo, {
      head: 'patch-1',
      base: 'main',
      title: 'From a fork',
      user: alice,
      headRepo: 'mallory/demo',
    });
    const comment = fake.addComment(owner, repo, forkPull.number, alice, '@patchbay-test please add a CHANGELOG entry');
    await sendWebhook(
      webhooks(),
      webhookSecret,
      'issue_comment',
      prCommentEvent(where, { number: forkPull.number, commentId: comment.id, user: alice, body: comment.body }),
    );
    const reply = await waitFor(
      async () => fake.commentsOn(owner, repo, forkPull.number).find((c) => c.user.login === fake.bot.login),
      'the fork refusal',
    );
    expect(reply.body).toMatch(/fork \(mallory\/demo\)/);
    expect(
      await app.store.findByThread({ source: 'github', owner, repo, number: forkPull.number, kind: 'pull' }),
    ).toBeUndefined();
  });

  it("starts a session from an issue, refuses the model's force-push and push to main, opens a draft PR that fixes the issue, and never lets the token into the sandbox", async () => {
    const mainBefore = await tip('main');
    const issueNumber = 7001;
    const comment = fake.addComment(
      owner,
      repo,
      issueNumber,
      alice,
      // Full autonomy: nothing is held for approval, so the command policy and the sandbox are what refuse.
      '@patchbay-test full autonomy: please fix this, force it if you must',
    );
    const payload = issueCommentEvent(where, {
      number: issueNumber,
      title: 'Missing fix file',
      body: 'We need fix.txt.',
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    expect((await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number: issueNumber, kind: 'issue' }),
      'the issue session',
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 60_000);
    expect(done.status).toBe('completed');

    expect(await tip('main')).toBe(mainBefore);
    expect(comment.reactions).toEqual(['eyes']);
    const events = await app.store.events(session.id);
    const outputs = events.flatMap((e) => (e.event.type === 'tool-end' ? [e.event.output] : []));
    // Refused before it ran, whatever the autonomy: the classifier and the policy both refuse a force-push.
    expect(outputs[0]).toMatch(/Command refused: it rewrites or deletes history/);
    // The script's pushes are refused before it runs: the gate reads the script sh is given.
    expect(outputs[2]).toMatch(/Command refused: it rewrites or deletes history/);

    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    expect(pr).toBeDefined();
    expect(pr.draft).toBe(true);
    expect(pr.user.login).toBe(fake.bot.login);
    expect(pr.body).toContain(`Fixes #${issueNumber}`);
    expect(pr.body).toContain('Requested by @alice via GitHub');
    expect(pr.body).toContain('`cat fix.txt`');
    expect(pr.body).toContain(`http://patchbay.test/sessions/${session.id}`);
    expect(await git(gitDir(), 'show', `refs/heads/${done.branch}:fix.txt`)).toBe('fixed');
    const final = await waitFor(
      async () =>
        fake
          .commentsOn(owner, repo, issueNumber)
          .find((c) => c.user.login === fake.bot.login && c.body.startsWith('✅')),
      'the issue reply',
    );
    expect(final.body).toContain(`/pull/${pr.number}`);
    // The PR is one of the session's threads now: comments on it reach the same session.
    expect((await app.store.findByThread({ source: 'github', owner, repo, number: pr.number, kind: 'pull' }))?.id).toBe(
      session.id,
    );

    expect(fake.issuedTokens.length).toBeGreaterThan(0);
    const allEvents = JSON.stringify(await app.store.events(session.id));
    for (const token of fake.issuedTokens) {
      expect(await filesContaining(app.dataDir, token)).toEqual([]);
      expect(allEvents).not.toContain(token);
      expect(app.logLines.join('\n')).not.toContain(token);
      expect(outputs.join('\n')).not.toContain(token);
    }
    // The sandbox's env dump really ran (so the check above looked at something).
    expect(outputs[3]).toMatch(/PATH=/);
    expect(fake.refused).toEqual([]);
  }, 120_000);

  it('answers a question on an issue in a comment that links the line it read, and opens no branch or pull request', async () => {
    const mainBefore = await tip('main');
    const pullsBefore = fake.pulls.length;
    const issueNumber = 7002;
    const comment = fake.addComment(owner, repo, issueNumber, alice, '@patchbay-test where is the title set?');
    const payload = issueCommentEvent(where, {
      number: issueNumber,
      title: 'Title',
      body: 'Where does the title come from?',
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    expect((await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number: issueNumber, kind: 'issue' }),
      'the issue session',
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed'], 60_000);
    expect(done.result?.answered).toBe(true);
    const link = `${fake.gitUrl}/${owner}/${repo}/blob/${mainBefore}/README.md#L1`;
    const reply = await waitFor(
      async () =>
        fake
          .commentsOn(owner, repo, issueNumber)
          .find((c) => c.user.login === fake.bot.login && c.body.startsWith('💬')),
      'the answer',
    );
    expect(reply.body).toContain(`[README.md:1](${link})`);
    expect(reply.body).toContain('Answering without changing anything');
    expect(fake.pulls.length).toBe(pullsBefore);
    expect(await tip(done.branch!)).toBe('');
    expect(await tip('main')).toBe(mainBefore);
    expect(fake.refused).toEqual([]);
  }, 120_000);
});
