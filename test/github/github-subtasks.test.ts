import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'fanout';
const installationId = 93;

/**
 * The progress comment of a session that fanned out (issue 22) lists its sub-tasks and follows
 * them: the real Patchbay with the fake GitHub; the children are made through the store while the
 * parent's run is busy, and their status changes (in their own logs) edit the parent's comment.
 */
describe('the GitHub progress comment of a session with sub-tasks', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  const where = { owner, repo, installationId };
  const issueThread: ThreadRef = { source: 'github', owner, repo, number: 5, kind: 'issue' };
  const progress = () =>
    fake.commentsOn(owner, repo, 5).find((c) => c.user.login === fake.bot.login && c.body.includes('[Session]'));

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    alice = fake.addUser('alice');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write' });
    // The parent's first turn takes long, so it is running the whole test; one running session at
    // most keeps the children (made without a run) from being run by the worker.
    const model = createScriptedProvider({ scenario: [{ text: 'Splitting the work.', delayMs: 120_000 }] });
    app = await startGitHubPatchbay(fake, model, { MAX_RUNNING_SESSIONS: '1' });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  it('lists the children and is edited as each one moves on', async () => {
    const comment = fake.addComment(owner, repo, 5, alice, '@patchbay-test add the field to the API and the client');
    const payload = issueCommentEvent(where, {
      number: 5,
      title: 'Field',
      body: 'Both sides.',
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    expect((await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const parent = await waitFor(() => app.store.findByThread(issueThread), 'the session');
    await waitFor(async () => progress()?.body.startsWith('🔄 Working on it.'), 'the comment of a running session');
    // The run's steps before its first model turn (access check, workspace, knowledge) are written
    // before the parent's log is taken as settled below: the turn itself takes the whole test.
    await waitFor(
      async () => (await app.store.events(parent.id, { types: ['autonomy-set'] })).length > 0,
      'the parent at its first turn',
    );

    const requester: Actor = { source: 'github', id: 'alice', name: 'alice' };
    const children = [
      { id: `${parent.id}-1`, index: 1, title: 'API field', repo: parent.repo, branch: 'patchbay/field-sub-1' },
      { id: `${parent.id}-2`, index: 2, title: 'Client', repo: parent.repo, branch: 'patchbay/field-sub-2' },
    ].map((c) => ({ ...c, prompt: c.title }));
    await app.store.spawnChildren(parent.id, {
      callId: 'call-1',
      requester,
      children,
      thread: { source: 'web' },
      step: {
        events: [
          {
            event: {
              type: 'subtasks-spawned',
              callId: 'call-1',
              children: children.map(({ id, index, title, repo, branch }) => ({
                sessionId: id,
                index,
                title,
                repo,
                branch,
              })),
            },
          },
        ],
      },
    });
    const page = (id: string) => `http://patchbay.test/sessions/${id}`;
    const items = () => progress()!.body.split('**Sub-tasks**\n\n')[1]?.split('\n') ?? [];
    await waitFor(async () => items().length === 2, 'the sub-tasks in the comment');
    expect(items()).toEqual([
      `1. ⏳ [\`API field\`](${page(children[0]!.id)}) · queued · \`patchbay/field-sub-1\``,
      `2. ⏳ [\`Client\`](${page(children[1]!.id)}) · queued · \`patchbay/field-sub-2\``,
    ]);
    // The parent waits for its sub-tasks (no question): its comment says so and keeps following it.
    await app.store.transition(parent.id, 'ask', {
      reason: 'waiting for its sub-tasks',
      patch: { pendingQuestion: null },
    });
    await waitFor(
      async () => progress()?.body.startsWith('⏳ Waiting for its sub-tasks to finish.'),
      'the waiting parent',
    );
    const parentSeq = (await app.store.get(parent.id))!.lastSeq;

    await app.store.transition(children[0]!.id, 'start');
    await waitFor(async () => items()[0]?.includes('🔄'), 'the first child running');
    await app.store.transition(children[1]!.id, 'fail', { patch: { error: 'the base branch is gone' } });
    await waitFor(async () => items()[1]?.includes('❌'), 'the second child failed');
    expect(items()).toEqual([
      `1. 🔄 [\`API field\`](${page(children[0]!.id)}) · running · \`patchbay/field-sub-1\``,
      `2. ❌ [\`Client\`](${page(children[1]!.id)}) · failed: the base branch is gone · \`patchbay/field-sub-2\``,
    ]);
    // The parent's comment moved with the children's own logs; nothing new in the parent's.
    expect((await app.store.get(parent.id))!.lastSeq).toBe(parentSeq);
    expect(progress()!.body.startsWith('⏳ Waiting for its sub-tasks to finish.')).toBe(true);

    // A child's question is relayed to the parent's log: the comment asks it, until the child goes on.
    await app.store.transition(children[0]!.id, 'ask', {
      patch: { pendingQuestion: { questionId: 'q1', toolCallId: 'call-q1', question: 'Which name for the field?' } },
    });
    await app.store.noteChildRun(children[0]!.id);
    await waitFor(async () => progress()?.body.startsWith('❓ A sub-task needs an answer:'), 'the relayed question');
    expect(progress()!.body.split('\n\n').slice(0, 3)).toEqual([
      '❓ A sub-task needs an answer:',
      '> Sub-task 1 (API field) asks: Which name for the field?',
      `Reply with a comment that mentions @patchbay-test. [Session](${page(parent.id)})`,
    ]);
    await app.store.transition(children[0]!.id, 'enqueue');
    await waitFor(
      async () => progress()?.body.startsWith('⏳ Waiting for its sub-tasks to finish.'),
      'the answered question',
    );
    expect(fake.refused).toEqual([]);
    await app.service.stop(parent.id, requester);
  }, 90_000);
});
