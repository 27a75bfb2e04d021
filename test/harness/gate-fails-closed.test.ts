import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { ModelMessage, ModelProvider, TurnRequest } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { example, issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { passingVerdict, verdict } from '../helpers/scripted-verifier.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from '../github/github-fixture.ts';

const owner = 'octo-org';
const installationId = 92;
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);
const toolOutputMarker = 'TOOL-OUTPUT-3f9a';
const summaryMarker = 'AGENT-SUMMARY-77c1';

/** A correct fix, with a shell call whose output only the implementer ever sees. */
function agent(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.findLastIndex((m) => m.role === 'user');
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  const turns: ScriptedTurn[] = [
    { toolCalls: [{ name: 'run_shell', input: { command: `echo ${toolOutputMarker}` } }] },
    {
      toolCalls: [
        { name: 'write_file', input: { path: 'add.js', content: `module.exports = (a, b) => a + b; // ${turn}\n` } },
      ],
    },
    { text: `Fixed add. ${summaryMarker}` },
  ];
  return turns[Math.min(turn, turns.length - 1)]!;
}

/** The verifier's answer by the task it is shown; every request it got is kept. */
function createVerifier() {
  const requests: TurnRequest[] = [];
  const scripted = createScriptedProvider({
    model: 'scripted-verifier',
    scenario: (messages) => {
      const prompt = (messages[0] as { content: string }).content;
      const v = prompt.includes('five please')
        ? verdict([2, 1, 1, 1], 'Partly.')
        : prompt.includes('zero please')
          ? verdict([2, 2, 2, 0], 'Out of scope.')
          : passingVerdict;
      return { toolCalls: [{ name: 'record_verdict', input: v }] };
    },
  });
  const provider: ModelProvider = {
    name: 'scripted',
    model: 'scripted-verifier',
    contextWindow: scripted.contextWindow,
    async runTurn(request) {
      requests.push(request);
      const prompt = (request.messages[0] as { content: string }).content;
      if (prompt.includes('verifier down')) {
        return {
          toolCalls: [],
          stopReason: 'error',
          usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
          error: { code: 'model_unavailable', message: 'overloaded', retryable: true },
        };
      }
      return scripted.runTurn(request);
    },
  };
  return { provider, requests };
}

describe('the gate fails closed (fake GitHub, real Patchbay, sandbox and git)', () => {
  let fake: FakeGitHub;
  const upstreams: RemoteFixture[] = [];
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  const verifier = createVerifier();
  let nextIssue = 9100;

  async function addRepo(name: string, testScript?: string) {
    const upstream = await createRemote();
    upstreams.push(upstream);
    if (testScript) {
      await upstream.pushCommit(
        'package.json',
        JSON.stringify({ name, private: true, scripts: { test: testScript } }),
        'package',
      );
      await upstream.pushCommit(
        'test.js',
        "const assert = require('node:assert');\nassert.strictEqual(require('./add.js')(2, 3), 5);\n",
        'test',
      );
    }
    await upstream.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
    await fake.addRepo(owner, name, upstream.remote, installationId, { alice: 'write' });
  }

  beforeAll(async () => {
    fake = await startFakeGitHub();
    alice = fake.addUser('alice');
    await addRepo('calc', 'node test.js');
    await addRepo('bare');
    // A check that passes, then moves the session branch in the agent's workspace behind its back.
    await addRepo(
      'mover',
      'node test.js && git -C /workspace -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m moved',
    );
    app = await startGitHubPatchbay(
      fake,
      createScriptedProvider({ scenario: agent }),
      {},
      { verifierModel: verifier.provider },
    );
  }, 180_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    for (const u of upstreams) await u.cleanup();
  });

  async function run(repo: string, text: string) {
    const number = nextIssue++;
    const where = { owner, repo, installationId };
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
    const session = await waitFor(
      () => app.store.findByThread({ source: 'github', owner, repo, number, kind: 'issue' }),
      `a session for issue ${number}`,
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'waiting'], 200_000);
    const events = await app.store.events(session.id);
    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    const head = await git(fake.repo(owner, repo).gitDir, 'rev-parse', `refs/heads/${done.branch}`);
    const statuses = fake.statuses.filter(
      (s) => s.repo.endsWith(`/${repo}`) && s.context === 'patchbay/verify' && s.sha === head,
    );
    return { done, events, pr, head, statuses };
  }

  it('publishes a pushed commit the gate did not judge as not verified: draft, a failing status on it, words that match', {
    timeout: 240_000,
  }, async () => {
    const { done, events, pr, head, statuses } = await run('mover', 'add(2, 3) should be 5, fix add.js');
    const checked = of(events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checked.map((c) => c.outcome)).toEqual(['passed']);
    expect(head).not.toBe(checked[0]!.commit);
    expect(await git(fake.repo(owner, 'mover').gitDir, 'log', '-1', '--format=%s', head)).toBe('moved');
    expect(pr.draft).toBe(true);
    expect(statuses.map((s) => s.state)).toEqual(['failure']);
    expect(statuses[0]!.description).toContain('is not the commit the checks and the verifier judged');
    expect(of(events, 'review-gate')).toEqual([expect.objectContaining({ commit: head, ready: false })]);
    expect(done.status).toBe('completed');
    const finished = of(events, 'status-changed').at(-1)!;
    expect(finished.reason).toMatch(
      /; kept as draft at [0-9a-f]{12}: [0-9a-f]{12} is not the commit the checks and the verifier judged/,
    );
    expect(finished.reason).not.toContain('ready for review');
    expect(fake.refused).toEqual([]);
  });

  it('keeps a PR draft when no checks are known, and its status and body say so and how to add them', {
    timeout: 240_000,
  }, async () => {
    const { pr, statuses, events } = await run('bare', 'add(2, 3) should be 5, fix add.js');
    expect(pr.draft).toBe(true);
    expect(statuses.map((s) => s.state)).toEqual(['failure']);
    expect(statuses[0]!.description).toContain('no checks were found');
    expect(statuses[0]!.description).not.toContain('Checks and review passed');
    expect(pr.body).toContain('No checks were found for this repository. Add a `test` script');
    expect(of(events, 'review-gate').map((g) => g.ready)).toEqual([false]);
    expect(fake.refused).toEqual([]);
  });

  it('never counts a verifier error as a pass', { timeout: 240_000 }, async () => {
    const { pr, statuses, events } = await run('calc', 'add(2, 3) should be 5, fix add.js (verifier down)');
    expect(of(events, 'verification-finished').map((v) => v.outcome)).toEqual(['not-run']);
    expect(pr.draft).toBe(true);
    expect(statuses.map((s) => s.state)).toEqual(['failure']);
    expect(statuses[0]!.description).toContain('the verifier gave no verdict');
    expect(fake.graphqlCalls.flatMap((c) => c.operations)).not.toContain('markPullRequestReadyForReview');
  });

  it('passes a verdict only at 6 of 8 with no zero, through the whole path', { timeout: 300_000 }, async () => {
    const five = await run('calc', 'add(2, 3) should be 5, fix add.js (five please)');
    expect(of(five.events, 'verification-finished').map((v) => [v.outcome, v.total])).toEqual([
      ['failed', 5],
      ['failed', 5],
    ]);
    expect(five.pr.draft).toBe(true);
    expect(five.statuses.map((s) => s.state)).toEqual(['failure']);
    const zero = await run('calc', 'add(2, 3) should be 5, fix add.js (zero please)');
    expect(of(zero.events, 'verification-finished').map((v) => [v.outcome, v.total])).toEqual([
      ['failed', 6],
      ['failed', 6],
    ]);
    expect(zero.pr.draft).toBe(true);
    const passing = await run('calc', 'add(2, 3) should be 5, fix add.js');
    expect(passing.pr.draft).toBe(false);
    expect(passing.statuses.map((s) => [s.state, s.description])).toEqual([['success', 'Checks and review passed']]);
    readyPr = { pr: passing.pr, branch: passing.done.branch! };
  });

  it('undoes ready when the PR head moves while it is marked ready: draft again, a failing status on the new head', {
    timeout: 240_000,
  }, async () => {
    let moved: string | undefined;
    fake.hooks.afterGraphql = async (operations) => {
      if (!operations.includes('markPullRequestReadyForReview') || moved) return;
      // A person's push lands right as the PR is marked ready.
      const pr = fake.pulls.at(-1)!;
      const gitDir = fake.repo(owner, 'calc').gitDir;
      const parent = await git(gitDir, 'rev-parse', pr.head);
      moved = await git(
        gitDir,
        '-c',
        'user.name=Alice',
        '-c',
        'user.email=alice@example.com',
        'commit-tree',
        `${parent}^{tree}`,
        '-p',
        parent,
        '-m',
        'pushed meanwhile',
      );
      await git(gitDir, 'update-ref', `refs/heads/${pr.head}`, moved, parent);
    };
    try {
      const { pr, events } = await run('calc', 'add(2, 3) should be 5, fix add.js (moving head)');
      const judged = of(events, 'review-gate')[0]!;
      expect(judged.ready).toBe(true);
      expect(moved).toBeDefined();
      expect(pr.draft).toBe(true);
      const statuses = fake.statuses.filter(
        (s) => s.context === 'patchbay/verify' && (s.sha === judged.commit || s.sha === moved),
      );
      expect(statuses.map((s) => [s.sha, s.state])).toEqual([
        [judged.commit, 'success'],
        [moved, 'failure'],
      ]);
      expect(statuses[1]!.description).toBe(
        `Not verified: pushed after Patchbay verified ${judged.commit.slice(0, 12)}`,
      );
      expect(fake.refused).toEqual([]);
    } finally {
      fake.hooks.afterGraphql = undefined;
    }
  });

  let readyPr: { pr: FakeGitHub['pulls'][number]; branch: string } | undefined;
  it("marks a person's push to a ready PR as not verified and turns the PR back to draft", {
    timeout: 120_000,
  }, async () => {
    const { pr, branch } = readyPr!;
    const gitDir = fake.repo(owner, 'calc').gitDir;
    // Alice pushes a commit of her own to the PR's branch.
    const tree = await git(gitDir, 'rev-parse', `${branch}^{tree}`);
    const parent = await git(gitDir, 'rev-parse', branch);
    const pushed = await git(
      gitDir,
      '-c',
      'user.name=Alice',
      '-c',
      'user.email=alice@example.com',
      'commit-tree',
      tree,
      '-p',
      parent,
      '-m',
      'my own tweak',
    );
    await git(gitDir, 'update-ref', `refs/heads/${branch}`, pushed, parent);
    const payload = example('pull_request', 'synchronize');
    payload.repository = {
      ...payload.repository,
      name: 'calc',
      full_name: `${owner}/calc`,
      owner: { ...payload.repository.owner, login: owner },
    };
    payload.sender = { ...payload.sender, login: alice.login, id: alice.id, type: 'User' };
    payload.installation = { id: installationId, node_id: 'MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==' };
    payload.number = pr.number;
    payload.pull_request = {
      ...payload.pull_request,
      number: pr.number,
      node_id: `PR_kw${pr.number}`,
      draft: false,
      body: pr.body,
      head: { ...payload.pull_request.head, ref: branch, sha: pushed },
    };
    expect((await sendWebhook(`${app.url}/github/webhooks`, webhookSecret, 'pull_request', payload)).status).toBe(202);
    const status = await waitFor(
      async () => fake.statuses.find((s) => s.sha === pushed && s.context === 'patchbay/verify'),
      'a status on the pushed commit',
    );
    expect(status.state).toBe('failure');
    expect(status.description).toBe('Not verified: pushed by @alice; Patchbay did not check this commit');
    await waitFor(
      async () => fake.pulls.find((p) => p.number === pr.number && p.repo === pr.repo)?.draft || undefined,
      'the PR to be a draft again',
    );
    expect(fake.refused).toEqual([]);
  });

  it('shows the verifier no implementer transcript or tool output', () => {
    expect(verifier.requests.length).toBeGreaterThan(0);
    for (const request of verifier.requests) {
      expect(request.messages).toHaveLength(1);
      const text = JSON.stringify(request);
      expect(text).not.toContain(toolOutputMarker);
      expect(text).not.toContain(summaryMarker);
      expect(text).not.toContain('run_shell');
    }
  });
});
