import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'ci-repo';
const installationId = 95;
const where = { owner, repo, installationId };
const workflow = '.github/workflows/ci.yml';

/** The agent adds a CI workflow, as people ask it to. */
const addsWorkflow = createScriptedProvider({
  scenario: (messages) =>
    messages.some((m) => m.role === 'assistant')
      ? { text: 'Added a CI workflow.' }
      : {
          toolCalls: [
            {
              name: 'write_file',
              input: { path: workflow, content: 'on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps: []\n' },
            },
          ],
        },
});

/** GitHub with or without the Workflows permission granted to the App; one request for a CI workflow. */
function workflowPush(granted: boolean) {
  const state: { fake?: FakeGitHub; upstream?: RemoteFixture; app?: GitHubPatchbay } = {};
  beforeAll(async () => {
    state.fake = await startFakeGitHub({
      appPermissions: {
        contents: 'write',
        issues: 'write',
        pull_requests: 'write',
        statuses: 'write',
        metadata: 'read',
        ...(granted && { workflows: 'write' as const }),
      },
    });
    state.upstream = await createRemote();
    await state.upstream.pushCommit('README.md', '# ci-repo\n', 'readme');
    const alice = state.fake.addUser('alice');
    await state.fake.addRepo(owner, repo, state.upstream.remote, installationId, { alice: 'write' });
    state.app = await startGitHubPatchbay(state.fake, addsWorkflow);
    const comment = state.fake.addComment(owner, repo, 1, alice, '@patchbay-test please add a CI workflow');
    const payload = issueCommentEvent(where, {
      number: 1,
      title: 'CI',
      body: 'We need CI',
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    const sent = await sendWebhook(`${state.app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload);
    expect(sent.status).toBe(202);
  }, 180_000);
  afterAll(async () => {
    await state.app?.dispose();
    await state.fake?.close();
    await state.upstream?.cleanup();
  });
  return state as Required<typeof state>;
}

async function sessionEnd(app: GitHubPatchbay) {
  const session = await waitFor(
    () => app.store.findByThread({ source: 'github', owner, repo, number: 1, kind: 'issue' }),
    'the session',
  );
  return waitForStatus(app, session.id, ['completed', 'failed', 'waiting'], 150_000);
}

describe('a push that adds a workflow file, without the Workflows permission', () => {
  const state = workflowPush(false);

  it('is refused as GitHub refuses it, and the thread says why and what to grant', { timeout: 200_000 }, async () => {
    const done = await sessionEnd(state.app);
    expect(done.status).toBe('failed');
    expect(done.error).toContain(`it changes the workflow file ${workflow}`);
    const told = await waitFor(
      async () => state.fake.commentsOn(owner, repo, 1).find((c) => c.body.includes('Workflows permission')),
      'the reason in the issue thread',
    );
    expect(told.body).toContain('Workflows: Read and write');
    expect(state.fake.pulls).toEqual([]);
    expect(state.fake.refused).toEqual([]);
  });
});

describe('a push that adds a workflow file, with the Workflows permission', () => {
  const state = workflowPush(true);

  it('asks its git token for workflows and pushes', { timeout: 200_000 }, async () => {
    const done = await sessionEnd(state.app);
    expect(done.status).toBe('completed');
    const files = await git(state.fake.repo(owner, repo).gitDir, 'ls-tree', '-r', '--name-only', done.branch!);
    expect(files.split('\n')).toContain(workflow);
    expect(state.fake.refused).toEqual([]);
  });
});
