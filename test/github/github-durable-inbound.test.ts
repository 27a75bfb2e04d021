import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import type { ThreadRef } from '../../src/core/thread-ref.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'inbox';
const installationId = 91;

describe('GitHub deliveries through the durable inbound pipeline', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  const where = { owner, repo, installationId };
  const webhooks = () => `${app.url}/github/webhooks`;
  const issueThread = (number: number): ThreadRef => ({ source: 'github', owner, repo, number, kind: 'issue' });
  const botComments = (number: number) =>
    fake.commentsOn(owner, repo, number).filter((c) => c.user.login === fake.bot.login);

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    alice = fake.addUser('alice');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write' });
    // Two attempts, a second apart: enough to see the retry and the give-up without waiting long.
    app = await startGitHubPatchbay(
      fake,
      createScriptedProvider({ scenario: [{ text: 'Nothing to change.' }] }),
      {},
      { inbound: { retry: { retries: 1, delaySeconds: 1, maxDelaySeconds: 1 } } },
    );
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  it('does nothing for a signed body replayed under a new delivery id or a new event header', async () => {
    const comment = fake.addComment(owner, repo, 1, alice, '@patchbay-test tidy the README');
    const payload = issueCommentEvent(where, {
      number: 1,
      title: 'Tidy',
      body: 'Please tidy.',
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    expect((await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const session = await waitFor(() => app.store.findByThread(issueThread(1)), 'the session');
    await waitFor(async () => botComments(1).length === 1, 'the progress comment');

    const replayed = await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload);
    expect(replayed.status).toBe(200);
    expect(JSON.parse(replayed.text)).toEqual({ ok: true, duplicate: true });
    const relabelled = await sendWebhook(webhooks(), webhookSecret, 'pull_request_review_comment', payload);
    expect(relabelled.status).toBe(200);
    expect(JSON.parse(relabelled.text)).toEqual({ ok: true, duplicate: true });

    const stored = (await app.inbound.list()).filter((d) => d.source === 'github');
    expect(stored).toHaveLength(1);
    expect(stored[0]!.dedupeKey).toBe(`issue-comment:${comment.id}:created:${String(payload.comment.updated_at)}`);
    expect((await app.store.list()).filter((s) => s.id !== session.id && s.prompt.includes('tidy'))).toEqual([]);
    expect(botComments(1)).toHaveLength(1);
    expect(comment.reactions).toEqual(['eyes']);
    expect(fake.refused).toEqual([]);
  }, 60_000);

  it('retries a delivery that fails, and after its last attempt says why on the issue and lists it at GET /api/deliveries?failed=true', async () => {
    // The App lost its read access to collaborators: the permission check is refused on every attempt.
    fake.fail('repos/get-collaborator-permission-level', 403, 'Resource not accessible by integration');
    try {
      const comment = fake.addComment(owner, repo, 2, alice, '@patchbay-test fix the flaky test');
      const payload = issueCommentEvent(where, {
        number: 2,
        title: 'Flaky',
        body: 'It flakes.',
        commentId: comment.id,
        user: alice,
        comment: comment.body,
      });
      const sent = await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload);
      expect(sent.status).toBe(202);
      const reply = await waitFor(async () => botComments(2)[0], 'the failure reply');
      expect(reply.body).toMatch(/^@alice I could not process this comment: Resource not accessible by integration/);
      const response = await fetch(`${app.url}/api/deliveries?failed=true`);
      expect(response.status).toBe(200);
      const failed = (await response.json()) as {
        source: string;
        deliveryId: string;
        status: string;
        attempts: number;
        error: string;
      }[];
      expect(failed).toEqual([
        expect.objectContaining({ source: 'github', deliveryId: sent.deliveryId, status: 'failed', attempts: 2 }),
      ]);
      expect(failed[0]!.error).toContain('Resource not accessible by integration');
      expect(await app.store.findByThread(issueThread(2))).toBeUndefined();
      expect(fake.refused.map((r) => r.status)).toEqual([403, 403]);
    } finally {
      fake.restore('repos/get-collaborator-permission-level');
    }
  }, 60_000);
});
