import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent } from '../fakes/fake-github-webhooks.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'redelivered';
const installationId = 97;
const where = { owner, repo, installationId };

describe('a GitHub webhook delivered while the database was down (GitHub never redelivers by itself)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    await upstream.pushCommit('README.md', '# redelivered\n', 'readme');
    alice = fake.addUser('alice');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write' });
    app = await startGitHubPatchbay(
      fake,
      createScriptedProvider({ scenario: () => ({ text: 'Nothing needs to change.' }) }),
      { GITHUB_REDELIVERY_SECONDS: '1' },
      { databaseProxy: true },
    );
    fake.deliveries.point(`${app.url}/github/webhooks`, webhookSecret);
  }, 180_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  it('is found among the failed deliveries, redelivered once the database is back, and handled once', {
    timeout: 180_000,
  }, async () => {
    const comment = fake.addComment(owner, repo, 12, alice, '@patchbay-test please check the README');
    const payload = issueCommentEvent(where, {
      number: 12,
      title: 'README',
      body: 'Check it',
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    app.databaseProxy!.cut();
    const refused = await fake.deliveries.deliver('issue_comment', payload);
    expect(refused.status_code).toBeGreaterThanOrEqual(500);
    app.databaseProxy!.restore();

    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number: 12, kind: 'issue' }),
      'the session the redelivered mention starts',
      60_000,
    );
    await waitForStatus(app, session.id, ['completed', 'failed'], 120_000);
    const tries = () => fake.deliveries.attempts().filter((a) => a.guid === refused.guid);
    expect(tries().map((a) => [a.redelivery, a.status_code])).toEqual([
      [false, refused.status_code],
      [true, 202],
    ]);
    // Later looks find it handled and ask nothing more; another redelivery (a second process
    // asking) is known by the inbound dedupe.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(tries()).toHaveLength(2);
    expect(fake.deliveries.redeliver(tries()[0]!.id)).toBe(true);
    await fake.deliveries.settled();
    expect(tries().at(-1)!.status_code).toBe(200);
    const ours = () => fake.commentsOn(owner, repo, 12).filter((c) => c.user.login === fake.bot.login);
    await waitFor(async () => (ours().length > 0 ? ours() : undefined), 'the progress comment');
    expect(ours()).toHaveLength(1);
    expect(fake.refused).toEqual([]);
  });
});
