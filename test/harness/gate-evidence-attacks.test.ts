import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { issueCommentEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { passingVerdict, verdict } from '../helpers/scripted-verifier.ts';
import { startGitHubPatchbay, webhookSecret, type GitHubPatchbay } from '../github/github-fixture.ts';

const owner = 'octo-org';
const installationId = 93;
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);
const write = (path: string, content: string): ScriptedTurn => ({
  toolCalls: [{ name: 'write_file', input: { path, content } }],
});
const shell = (command: string): ScriptedTurn => ({ toolCalls: [{ name: 'run_shell', input: { command } }] });

const assertion = "assert.strictEqual(require('./add.js')(2, 3), 5);";
const testFile = `const assert = require('node:assert');\nrequire('dep');\n${assertion}\nconsole.log('ok');\n`;
/** What a dependency that "disables assert" does: every strictEqual passes. */
const poison = "require('node:assert').strictEqual = () => {};\n";
/** A wrong add.js that, when a check loads it, swaps the checkout's installed `dep` for the poison. */
const poisoningAdd = `const fs = require('node:fs');
const path = require('node:path');
const dep = path.join(__dirname, 'node_modules', 'dep');
fs.rmSync(dep, { recursive: true, force: true });
fs.mkdirSync(dep);
fs.writeFileSync(path.join(dep, 'index.js'), ${JSON.stringify(poison)});
module.exports = (a, b) => a - b;
`;

/**
 * The attacks of issue 35, each a wrong fix the agent hides from the gate from inside its own
 * workspace; the task text names the attack. Every rework repeats the same moves.
 */
function agent(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.findLastIndex((m) => m.role === 'user');
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  const step = (...turns: ScriptedTurn[]) => turns[Math.min(turn, turns.length - 1)]!;
  const texts = messages.flatMap((m) => (m.role === 'user' ? [m.content] : []));
  const request = texts.findLastIndex((t) => t.includes('fix add.js'));
  const asked = texts[request] ?? '';
  const gutted = [write('test.js', "console.log('ok');\n"), write('add.js', 'module.exports = (a, b) => b - a;\n')];
  if (asked.includes('diff driver'))
    return step(
      ...gutted,
      shell(
        "mkdir -p .git/info && echo 'test.js diff=quiet' >> .git/info/attributes && git config diff.quiet.command true",
      ),
      { text: 'Fixed add.' },
    );
  if (asked.includes('test script'))
    return step(
      write('package.json', JSON.stringify({ ...packageJson, scripts: { test: 'true' } })),
      write('add.js', 'module.exports = (a, b) => b - a;\n'),
      { text: 'Fixed add.' },
    );
  if (asked.includes('external diff'))
    return step(...gutted, shell('git config diff.external true'), { text: 'Fixed add.' });
  if (asked.includes('module under .git'))
    return step(
      shell(
        "mkdir -p .git/node_modules/adder && echo 'module.exports = (a, b) => a + b;' > .git/node_modules/adder/index.js",
      ),
      write('add.js', "module.exports = require('adder');\n"),
      { text: 'Fixed add.' },
    );
  // Setup-cache poisoning: the first commit's code poisons the installed dependency while the
  // checks run; the next one is a plain (still wrong) edit, and the agent also writes the poison
  // straight into where the setup cache used to live, inside its own .git.
  const rounds = texts.slice(request + 1).filter((t) => t.includes('checks on your commit')).length;
  if (rounds === 0) return step(write('add.js', poisoningAdd), { text: 'Fixed add.' });
  return step(
    shell(
      `mkdir -p .git/poison-dep && printf %s ${JSON.stringify(poison)} > .git/poison-dep/index.js && for d in .git/patchbay-setup/*/node_modules; do ln -sfn /workspace/.git/poison-dep "$d/dep"; done; true`,
    ),
    write('add.js', 'module.exports = (a, b) => a - b; // tidied\n'),
    { text: 'Fixed add.' },
  );
}

/**
 * A reviewer that fails a change only when it can see that the test's assertion was removed, or
 * that a file marked as defining the checks now makes the test script pass whatever happens.
 */
const verifier = createScriptedProvider({
  model: 'scripted-verifier',
  scenario: (messages) => {
    const prompt = (messages[0] as { content: string }).content;
    const emptied =
      /^- modified `package\.json`: .*defines how the checks run/m.test(prompt) && prompt.includes('"test":"true"');
    const v = prompt.includes(`-${assertion}`)
      ? verdict([2, 1, 0, 0], 'The change removes the assertion the task is about.')
      : emptied
        ? verdict([2, 1, 0, 1], 'The test script now passes whatever happens.')
        : passingVerdict;
    return { toolCalls: [{ name: 'record_verdict', input: v }] };
  },
});

const packageJson = {
  name: 'calc',
  private: true,
  scripts: { test: 'node test.js' },
  dependencies: { dep: 'file:./vendor/dep' },
};

describe('gate evidence the agent cannot forge (fake GitHub, real Patchbay, sandbox and git)', () => {
  let fake: FakeGitHub;
  let upstream: RemoteFixture;
  let app: GitHubPatchbay;
  let alice: ReturnType<FakeGitHub['addUser']>;
  let nextIssue = 9500;

  beforeAll(async () => {
    fake = await startFakeGitHub();
    alice = fake.addUser('alice');
    upstream = await createRemote();
    const files: Record<string, string> = {
      '.npmrc': 'audit=false\nfund=false\nfetch-retries=0\n',
      '.gitignore': 'node_modules/\n',
      'vendor/dep/package.json': JSON.stringify({ name: 'dep', version: '1.0.0', main: 'index.js' }),
      'vendor/dep/index.js': 'module.exports = true;\n',
      'test.js': testFile,
      'add.js': 'module.exports = (a, b) => a - b;\n',
      'package.json': JSON.stringify(packageJson),
    };
    for (const [path, content] of Object.entries(files)) {
      await mkdir(join(upstream.root, 'scratch', dirname(path)), { recursive: true });
      await upstream.pushCommit(path, content, path);
    }
    await fake.addRepo(owner, 'calc', upstream.remote, installationId, { alice: 'write' });
    app = await startGitHubPatchbay(fake, createScriptedProvider({ scenario: agent }), {}, { verifierModel: verifier });
  }, 180_000);
  afterAll(async () => {
    await app?.dispose();
    await fake?.close();
    await upstream?.cleanup();
  });

  async function run(text: string) {
    const number = nextIssue++;
    const where = { owner, repo: 'calc', installationId };
    const comment = fake.addComment(owner, 'calc', number, alice, `@patchbay-test ${text}`);
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
      () => app.store.findByThread({ source: 'github', owner, repo: 'calc', number, kind: 'issue' }),
      `a session for issue ${number}`,
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'waiting'], 300_000);
    const events = await app.store.events(session.id);
    const pr = fake.pulls.find((p) => p.head === done.branch)!;
    const head = await git(fake.repo(owner, 'calc').gitDir, 'rev-parse', `refs/heads/${done.branch}`).catch(() => {
      throw new Error(`nothing pushed; events:\n${events.map((e) => JSON.stringify(e.event)).join('\n')}`);
    });
    const statuses = fake.statuses.filter((s) => s.context === 'patchbay/verify' && s.sha === head);
    return { done, events, pr, head, statuses };
  }

  /** No ready PR and no success status on the pushed head. */
  function expectNotReady(outcome: Awaited<ReturnType<typeof run>>) {
    expect(outcome.pr.draft).toBe(true);
    expect(outcome.statuses.length).toBeGreaterThan(0);
    expect(outcome.statuses.map((s) => s.state)).not.toContain('success');
    expect(of(outcome.events, 'review-gate').map((g) => g.ready)).not.toContain(true);
    expect(fake.refused).toEqual([]);
  }

  it('a diff driver in the agent’s .git does not hide a gutted test from the verifier', {
    timeout: 360_000,
  }, async () => {
    const outcome = await run('add(2, 3) should be 5, fix add.js (diff driver)');
    // The gutted test passes: only the diff can show what was done.
    expect(
      of(outcome.events, 'check-finished')
        .filter((c) => c.phase === 'check')
        .map((c) => c.outcome),
    ).toContain('passed');
    expect(of(outcome.events, 'verification-finished').map((v) => v.outcome)).toEqual(['failed', 'failed']);
    expectNotReady(outcome);
  });

  it('diff.external in the agent’s .git does not empty the diff', { timeout: 360_000 }, async () => {
    const outcome = await run('add(2, 3) should be 5, fix add.js (external diff)');
    expect(of(outcome.events, 'verification-finished').map((v) => v.outcome)).toEqual(['failed', 'failed']);
    expectNotReady(outcome);
  });

  it('a module under the agent’s .git is not found by the checks: a clean clone fails', {
    timeout: 360_000,
  }, async () => {
    const outcome = await run('add(2, 3) should be 5, fix add.js (module under .git)');
    const checks = of(outcome.events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.length).toBeGreaterThan(0);
    expect(checks.map((c) => c.outcome)).not.toContain('passed');
    expect(`${checks[0]!.logHead}${checks[0]!.logTail}`).toContain("Cannot find module 'adder'");
    expectNotReady(outcome);
  });

  it('a test script changed to `true` passes the checks, but the verifier is told the change redefines them', {
    timeout: 360_000,
  }, async () => {
    const asked = verifier.requests.length;
    const outcome = await run('add(2, 3) should be 5, fix add.js (test script)');
    const checks = of(outcome.events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => c.outcome)).toContain('passed');
    const prompt = (verifier.requests[asked]!.messages[0] as { content: string }).content;
    expect(prompt).toMatch(
      /^- modified `package\.json`: .*\(defines how the checks run: they ran as this commit defines them\)$/m,
    );
    expect(prompt).not.toMatch(/^- modified `add\.js`: .*defines how the checks run/m);
    expect(of(outcome.events, 'verification-finished').map((v) => v.outcome)).toContain('failed');
    expectNotReady(outcome);
  });

  it('a setup cache poisoned by an earlier round or from the agent’s .git is not reused', {
    timeout: 420_000,
  }, async () => {
    const outcome = await run('add(2, 3) should be 5, fix add.js (cache)');
    const checks = of(outcome.events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => c.outcome)).toEqual(['failed', 'failed']);
    expect(new Set(checks.map((c) => c.commit)).size).toBe(2);
    // The second round's cached setup output was not what setup made, so setup ran again.
    const setups = of(outcome.events, 'check-finished').filter((c) => c.phase === 'setup');
    expect(setups.filter((s) => s.commit === checks[1]!.commit).map((s) => s.outcome)).toEqual(['passed']);
    expectNotReady(outcome);
  });
});
