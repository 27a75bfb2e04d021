import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'once-repo';
const installationId = 96;

/** The agent reads and finds nothing to change: the run ends quickly, with a final comment to show. */
const noChange = createScriptedProvider({ scenario: () => ({ text: 'Nothing needed changing.' }) });

/**
 * The "On it" comment of a request survives GitHub taking the post and the answer getting lost,
 * and a crash-like loss of the record after the post (the database gone at that moment): in each
 * case the thread has exactly one progress comment, edited to the end of the run.
 */
describe('the GitHub progress comment is posted once', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    await upstream.pushCommit('README.md', '# once\n', 'readme');
    alice = fake.addUser('alice');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write' });
    app = await startGitHubPatchbay(fake, noChange, {}, { databaseProxy: true });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  /** Mentions the bot on issue `number` and waits for the session's end (reading after `settled`). */
  async function mention(number: number, settled?: Promise<void>) {
    const comment = fake.addComment(owner, repo, number, alice, '@patchbay-test check the readme');
    const payload = issueCommentEvent(
      { owner, repo, installationId },
      { number, title: 'Readme', body: 'Look at it', commentId: comment.id, user: alice, comment: comment.body },
    );
    const sent = await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload);
    expect(sent.status).toBe(202);
    await settled;
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number, kind: 'issue' }),
      'the session',
    );
    return waitForStatus(app, session.id, ['completed', 'failed'], 90_000);
  }

  /** The bot's comments on the issue, once its progress comment shows the end of the run. */
  async function botCommentsAtTheEnd(number: number) {
    await waitFor(
      async () =>
        fake
          .commentsOn(owner, repo, number)
          .find((c) => c.user.login === fake.bot.login && c.body.startsWith('✅ Done.')),
      'the progress comment edited to the end',
      60_000,
    );
    return fake.commentsOn(owner, repo, number).filter((c) => c.user.login === fake.bot.login);
  }

  it('a post GitHub took whose answer was lost appears once and is edited to the end', {
    timeout: 150_000,
  }, async () => {
    fake.dropAfterAccept('issues/create-comment');
    const done = await mention(1);
    expect(done.status).toBe('completed');
    const comments = await botCommentsAtTheEnd(1);
    expect(comments.map((c) => c.body.split('\n')[0])).toEqual(['✅ Done.']);
    // The lost answer was resolved by looking at the thread, not by posting again.
    const posts = fake.calls.filter((c) => c.operationId === 'issues/create-comment' && c.path.includes(`/${repo}/`));
    expect(posts).toHaveLength(1);
    expect(fake.calls.some((c) => c.operationId === 'issues/list-comments')).toBe(true);
    expect(fake.refused).toEqual([]);
  });

  it('a post whose record was lost (the database gone right after GitHub took it) is found, not made again', {
    timeout: 150_000,
  }, async () => {
    const before = fake.calls.length;
    // The first answer of the post arrives while the database is away: the id cannot be recorded.
    const { promise: restored, resolve } = Promise.withResolvers<void>();
    fake.hooks.afterCommentCreate = () => {
      fake.hooks.afterCommentCreate = undefined;
      app.databaseProxy!.cut();
      setTimeout(() => {
        app.databaseProxy!.restore();
        resolve();
      }, 2_000);
    };
    const done = await mention(2, restored);
    expect(done.status).toBe('completed');
    const comments = await botCommentsAtTheEnd(2);
    expect(comments.map((c) => c.body.split('\n')[0])).toEqual(['✅ Done.']);
    const posts = fake.calls.slice(before).filter((c) => c.operationId === 'issues/create-comment');
    expect(posts).toHaveLength(1);
    expect(fake.refused).toEqual([]);
  });
});
