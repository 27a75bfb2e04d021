import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, prCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { passingVerdict, verdict } from '../helpers/scripted-verifier.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from './github-fixture.ts';

const owner = 'octo-org';
const repo = 'calc';
const installationId = 91;
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);

const write = (path: string, content: string): ScriptedTurn => ({
  toolCalls: [{ name: 'write_file', input: { path, content } }],
});

/** The agent's next move from the latest message it was given and its turns since. */
function decide(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.findLastIndex((m) => m.role === 'user');
  const text = last >= 0 ? (messages[last] as { content: string }).content : '';
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  const step = (...turns: ScriptedTurn[]) => turns[Math.min(turn, turns.length - 1)]!;
  const asked =
    messages
      .flatMap((m) => (m.role === 'user' && !m.content.includes('checks on your commit') ? [m.content] : []))
      .at(-1) ?? '';
  if (text.includes('checks on your commit') && asked.includes('multiply'))
    return step({ text: 'I could not make multiply work.' });
  if (text.includes('checks on your commit'))
    return step(write('add.js', 'module.exports = (a, b) => a + b;\n'), { text: 'Fixed add for real.' });
  if (text.includes('independent reviewer'))
    return step(write('add.js', 'module.exports = (a, b) => a + b; // reworked\n'), {
      text: 'Reworked as the reviewer asked.',
    });
  if (text.includes('multiply'))
    return step(write('add.js', 'module.exports = (a, b) => a * b;\n'), { text: 'Added multiply.' });
  if (text.includes('tidy'))
    return step(write('add.js', 'module.exports = function add(a, b) { return a + b; };\n'), { text: 'Tidied add.' });
  // First attempt at the bug: a wrong fix, tests not run.
  return step(write('add.js', 'module.exports = (a, b) => b - a;\n'), { text: 'Fixed add.' });
}

describe('the review gate on GitHub (fake GitHub REST + GraphQL schema, real Patchbay, sandbox and git)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  const where = { owner, repo, installationId };
  // Judges from what its prompt shows: the tidy-up task fails review twice, everything else passes.
  const verifier = createScriptedProvider({
    model: 'scripted-verifier',
    scenario: (messages) => {
      const prompt = (messages[0] as { content: string }).content;
      const v = !prompt.includes('tidy')
        ? passingVerdict
        : prompt.includes('// reworked')
          ? verdict([2, 1, 2, 0], 'Still rewrites more than asked.', { scope: 'still restyles add.js wholesale' })
          : verdict([2, 1, 2, 0], 'Rewrites add beyond the request.', {
              scope: 'rewrote add.js style that nobody asked about',
              completeness: 'the docs were not updated',
            });
      return { toolCalls: [{ name: 'record_verdict', input: v }] };
    },
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

  const webhooks = () => `${app.url}/github/webhooks`;
  const tip = (branch: string) => git(fake.repo(owner, repo).gitDir, 'rev-parse', `refs/heads/${branch}`);
  let issueSession: string;
  let pullNumber: number;

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
    expect((await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload)).status).toBe(202);
    return waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number, kind: 'issue' }),
      `a session for issue ${number}`,
    );
  }

  it('gives a second attempt when npm test fails, and marks the PR ready only for the SHA that passed', {
    timeout: 240_000,
  }, async () => {
    const session = await askOnIssue(8001, 'add(2, 3) should be 5, please fix add.js');
    issueSession = session.id;
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'waiting'], 200_000);
    expect(done.status).toBe('completed');
    const events = await app.store.events(session.id);
    expect(of(events, 'check-finished').map((c) => [c.command, c.outcome])).toEqual([
      ['npm test', 'failed'],
      ['npm test', 'passed'],
    ]);
    const head = await tip(done.branch!);
    expect(of(events, 'check-finished')[1]!.commit).toBe(head);

    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    pullNumber = pr.number;
    expect(pr.draft).toBe(false);
    expect(fake.graphqlCalls.map((c) => c.operations)).toEqual([['markPullRequestReadyForReview']]);
    expect(fake.statuses.map((s) => [s.sha, s.state, s.context, s.target_url])).toEqual([
      [head, 'success', 'patchbay/verify', `http://patchbay.test/sessions/${session.id}`],
    ]);
    expect(pr.body).toContain(`## Evidence for ${head.slice(0, 12)}`);
    expect(pr.body).toMatch(/\| ✅ passed \| `npm test` \| \d+\.\d s \|/);
    expect(pr.body).toContain('| scope | 2/2 | only what was asked |');
    expect(fake.refused).toEqual([]);
  });

  it('turns the PR back to draft when a later push fails its checks', { timeout: 240_000 }, async () => {
    const statusesBefore = fake.statuses.length;
    const comment = fake.addComment(
      owner,
      repo,
      pullNumber,
      alice,
      '@patchbay-test please make add a multiply as well',
    );
    const payload = prCommentEvent(where, {
      number: pullNumber,
      commentId: comment.id,
      user: alice,
      body: comment.body,
    });
    expect((await sendWebhook(webhooks(), webhookSecret, 'issue_comment', payload)).status).toBe(202);
    const waiting = await waitFor(
      async () => {
        const s = await app.store.get(issueSession);
        return s?.status === 'waiting' && s.pendingQuestion?.questionId.startsWith('gate:') ? s : undefined;
      },
      'the session to stop and ask about the failing checks',
      200_000,
    );
    const pr = fake.pulls.find((p) => p.number === pullNumber)!;
    const head = await tip(waiting.branch!);
    expect(pr.draft).toBe(true);
    expect(fake.graphqlCalls.map((c) => c.operations)).toEqual([
      ['markPullRequestReadyForReview'],
      ['convertPullRequestToDraft'],
    ]);
    expect(fake.statuses.slice(statusesBefore).map((s) => [s.sha, s.state])).toEqual([[head, 'failure']]);
    expect(waiting.pendingQuestion?.question).toContain('the same checks failed again with nothing new');
    expect(pr.body).toContain(`## Evidence for ${head.slice(0, 12)}`);
    expect(pr.body).toMatch(/\| ❌ failed \| `npm test` \|/);
    expect(fake.refused).toEqual([]);
  });

  it('reworks once on a failed verdict, then quotes the critique in the thread and keeps the PR a draft', {
    timeout: 240_000,
  }, async () => {
    const session = await askOnIssue(8002, 'please tidy add.js');
    const waiting = await waitFor(
      async () => {
        const s = await app.store.get(session.id);
        return s?.status === 'waiting' ? s : s?.status === 'completed' || s?.status === 'failed' ? s : undefined;
      },
      'the session to ask after the second failed verdict',
      200_000,
    );
    expect(waiting.status).toBe('waiting');
    const events = await app.store.events(session.id);
    const reworks = of(events, 'user-message').filter(
      (m) => m.actor.source === 'system' && m.text.includes('independent reviewer'),
    );
    expect(reworks).toHaveLength(1);
    expect(reworks[0]!.text).toContain('scope 0/2: rewrote add.js style that nobody asked about');
    expect(of(events, 'verification-finished').map((v) => [v.attempt, v.outcome, v.total])).toEqual([
      [1, 'failed', 5],
      [2, 'failed', 5],
    ]);
    const pr = fake.pulls.find((p) => p.head === waiting.branch)!;
    expect(pr.draft).toBe(true);
    const head = await tip(waiting.branch!);
    expect(fake.statuses.filter((s) => s.sha === head).map((s) => s.state)).toEqual(['failure']);
    // The issue thread gets the summary and every low score's reason, quoted, and the question.
    const progress = await waitFor(
      async () => fake.commentsOn(owner, repo, 8002).find((c) => c.body.includes('Still rewrites more than asked.')),
      'the critique on the issue',
    );
    expect(progress.body).toContain('> - scope 0/2: still restyles add.js wholesale');
    expect(progress.body).toContain('Keep it as a draft, try another approach, or stop?');
    expect(fake.refused).toEqual([]);
  });
});
