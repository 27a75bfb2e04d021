import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, pullRequestSynchronizeEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'private-calc';
const installationId = 93;
const where = { owner, repo, installationId };

const write = (path: string, content: string): ScriptedTurn => ({
  toolCalls: [{ name: 'write_file', input: { path, content } }],
});

/** A wrong fix first; the right one once the checks fail. */
function decide(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.findLastIndex((m) => m.role === 'user');
  const text = last >= 0 ? (messages[last] as { content: string }).content : '';
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  const step = (...turns: ScriptedTurn[]) => turns[Math.min(turn, turns.length - 1)]!;
  if (text.includes('checks on your commit'))
    return step(write('add.js', 'module.exports = (a, b) => a + b;\n'), { text: 'Fixed add for real.' });
  if (text.includes('subtract'))
    return step(write('sub.js', 'module.exports = (a, b) => a - b;\n'), { text: 'Added subtract.' });
  return step(write('add.js', 'module.exports = (a, b) => b - a;\n'), { text: 'Fixed add.' });
}

describe('a private repository on the Free plan (GitHub refuses draft pull requests there)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  const verifier = createScriptedProvider({
    model: 'scripted-verifier',
    scenario: () => ({ toolCalls: [{ name: 'record_verdict', input: passingVerdict }] }),
  });

  beforeAll(async () => {
    fake = await startFakeGitHub();
    upstream = await createRemote();
    await upstream.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    await upstream.pushCommit(
      'test.js',
      "const assert = require('node:assert');\nassert.strictEqual(require('./add.js')(2, 3), 5);\nconsole.log('ok');\n",
      'test',
    );
    await upstream.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
    alice = fake.addUser('alice');
    await fake.addRepo(owner, repo, upstream.remote, installationId, { alice: 'write' });
    fake.privateOnFreePlan(owner, repo);
    app = await startGitHubPatchbay(
      fake,
      createScriptedProvider({ scenario: decide }),
      {},
      { verifierModel: verifier },
    );
  }, 180_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  const tip = (branch: string) => git(fake.repo(owner, repo).gitDir, 'rev-parse', `refs/heads/${branch}`);

  async function askOnIssue(number: number, text: string) {
    const comment = fake.addComment(owner, repo, number, alice, `@patchbay-test ${text}`);
    const payload = issueCommentEvent(where, {
      number,
      title: text,
      body: text,
      commentId: comment.id,
      user: alice,
      comment: comment.body,
    });
    expect((await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'issue_comment', payload)).status).toBe(202);
    return waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number, kind: 'issue' }),
      `a session for issue ${number}`,
    );
  }

  it('opens a normal PR, linked in the thread, whose patchbay/verify status turns success when the gate passes', {
    timeout: 240_000,
  }, async () => {
    const session = await askOnIssue(9001, 'add(2, 3) should be 5, please fix add.js');
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'waiting'], 200_000);
    expect(done.status).toBe('completed');
    const head = await tip(done.branch!);
    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    expect(pr).toBeDefined();
    expect(fake.draftRefusals).toEqual([{ repo: `${owner}/${repo}`, head: done.branch }]);
    expect(pr.draft).toBe(false);
    // It opened marked as not verified; the passed gate took the mark off.
    expect(pr.title).toBe('Add(2, 3) should be 5, please fix add.js');
    expect(fake.calls.filter((c) => c.operationId === 'pulls/update').length).toBeGreaterThanOrEqual(1);
    expect(fake.statuses.filter((s) => s.sha === head).map((s) => [s.state, s.context])).toEqual([
      ['success', 'patchbay/verify'],
    ]);
    expect(fake.graphqlCalls).toEqual([]);
    const prUrl = `${fake.gitUrl}/${owner}/${repo}/pull/${pr.number}`;
    await waitFor(
      async () => fake.commentsOn(owner, repo, 9001).find((c) => c.body.includes(prUrl)),
      'the PR link in the issue thread',
    );
    expect(fake.refused).toEqual([]);
  });

  it('marks the title and fails patchbay/verify when a person pushes, without asking for a draft', {
    timeout: 60_000,
  }, async () => {
    const pr = fake.pulls.find((p) => p.repo === `${owner}/${repo}`)!;
    const pushedSha = await tip(pr.head);
    const payload = pullRequestSynchronizeEvent(where, {
      pull: { number: pr.number, title: pr.title, body: pr.body, head: pr.head, headSha: pushedSha, draft: false },
      user: alice,
    });
    const sent = await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'pull_request', payload);
    expect(sent.status).toBe(202);
    await waitFor(async () => pr.title.startsWith('[not verified] ') || undefined, 'the marked title');
    expect(fake.statuses.at(-1)).toMatchObject({ sha: pushedSha, state: 'failure', context: 'patchbay/verify' });
    expect(fake.graphqlCalls).toEqual([]);
    expect(fake.refused).toEqual([]);
  });

  it('remembers the repository has no drafts: the next PR does not ask for a draft again', {
    timeout: 240_000,
  }, async () => {
    const session = await askOnIssue(9002, 'please add subtract in sub.js');
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'waiting'], 200_000);
    expect(done.status).toBe('completed');
    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    expect(pr.draft).toBe(false);
    expect(fake.draftRefusals).toHaveLength(1);
    const head = await tip(done.branch!);
    expect(fake.statuses.filter((s) => s.sha === head).map((s) => s.state)).toEqual(['success']);
    expect(pr.title).toBe('Please add subtract in sub.js');
    expect(fake.refused).toEqual([]);
  });
});
