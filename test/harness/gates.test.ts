import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createCheckStore } from '../../src/sessions/harness-stores/pg-check-store.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

const lastUser = (messages: readonly ModelMessage[]) => {
  const m = messages.findLast((x) => x.role === 'user');
  return m?.role === 'user' ? m.content : '';
};
const turnsSinceUser = (messages: readonly ModelMessage[]) =>
  messages.length - 1 - messages.findLastIndex((m) => m.role === 'user');
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);

describe('harness gates through the real worker, sandbox and git (no publisher)', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    await remote.pushCommit(
      'test.js',
      "const assert = require('node:assert');\nassert.strictEqual(require('./add.js')(2, 3), 5);\nconsole.log('ok');\n",
      'test',
    );
    await remote.pushCommit('add.js', 'module.exports = (a, b) => a - b;\n', 'buggy add');
  });
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });
  afterAll(() => remote.cleanup());

  it('sends failing checks back to the agent and judges the commit whose `npm test` passes', {
    timeout: 180_000,
  }, async () => {
    const model = createScriptedProvider({
      scenario: (messages) => {
        const text = lastUser(messages);
        const turn = turnsSinceUser(messages);
        if (text.includes('checks on your commit')) {
          return (
            [
              {
                toolCalls: [
                  { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => a + b;\n' } },
                ],
              },
              { text: 'Fixed add: it subtracted.' },
            ] as ScriptedTurn[]
          )[Math.min(turn, 1)]!;
        }
        // First attempt: a wrong fix, and the test not run.
        return (
          [
            {
              toolCalls: [
                { name: 'write_file', input: { path: 'add.js', content: 'module.exports = (a, b) => b - a;\n' } },
              ],
            },
            { text: 'Fixed add.' },
          ] as ScriptedTurn[]
        )[Math.min(turn, 1)]!;
      },
    });
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Fix add so 2 + 3 is 5',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed'], 90_000);
    expect(done.status).toBe('completed');

    const events = await app.store.events(done.id);
    const checks = of(events, 'check-finished');
    expect(checks.map((c) => [c.command, c.outcome, c.exitCode])).toEqual([
      ['npm test', 'failed', 1],
      ['npm test', 'passed', 0],
    ]);
    const [first, second] = checks;
    expect(first!.commit).not.toBe(second!.commit);
    expect(second!.commit).toBe(done.result?.commit);
    expect(await git(remote.remote, 'show', `${second!.commit}:add.js`)).toBe('module.exports = (a, b) => a + b;');
    expect(`${first!.logHead}${first!.logTail}`).toContain('AssertionError');

    // The failure reached the agent as a harness message with the command, exit code and log.
    const toAgent = of(events, 'user-message').filter((m) => m.actor.source === 'system');
    expect(toAgent).toHaveLength(1);
    expect(toAgent[0]!.text).toContain('`npm test` exited with 1');
    expect(toAgent[0]!.text).toContain('AssertionError');

    // The verifier judged exactly the passing commit, and the rows keep the history.
    expect(of(events, 'verification-finished').map((v) => [v.commit, v.outcome, v.total])).toEqual([
      [second!.commit, 'passed', 8],
    ]);
    const rows = await createCheckStore(app.database.db).runs(done.id);
    expect(rows.map((r) => [r.commit, r.outcome])).toEqual([
      [first!.commit, 'failed'],
      [second!.commit, 'passed'],
    ]);
    // No publisher here: checked and verified, but nothing is "ready" without a pull request.
    expect(of(events, 'review-gate')).toEqual([
      { type: 'review-gate', commit: second!.commit, ready: false, reasons: ['no pull request to mark ready'] },
    ]);
  });

  it('builds the knowledge document once and reuses it until the default branch moves', {
    timeout: 180_000,
  }, async () => {
    const model = createScriptedProvider({ scenario: [{ text: 'Nothing to change.' }] });
    app = await startTestPatchbay({ model, serve: true });
    const run = async () => {
      const started = await app!.service.start({
        thread: { source: 'web' },
        actor: alice,
        text: 'Look at the add function please',
        repo: remote.remote,
      });
      if (started.kind !== 'started') throw new Error(started.kind);
      const done = await waitForStatus(app!, started.session.id, ['completed', 'failed'], 60_000);
      return of(await app!.store.events(done.id), 'knowledge-loaded')[0]!;
    };
    const one = await run();
    const two = await run();
    const moved = await remote.pushCommit(
      'CONTRIBUTING.md',
      '# Contributing\n\n## Testing\n\nRun `npm test`.\n',
      'docs',
    );
    const three = await run();
    expect([one.rebuilt, two.rebuilt, three.rebuilt]).toEqual([true, false, true]);
    expect(two.commit).toBe(one.commit);
    expect(three.commit).toBe(moved);
    expect(one.checks).toEqual(['npm test']);
    expect(one.setup).toEqual([]);

    // People read and edit it over the API; the edit wins over the extraction.
    const url = `${app.url}/api/repos/${encodeURIComponent(remote.remote)}/knowledge`;
    const got = await fetch(url);
    expect(got.status).toBe(200);
    const body = (await got.json()) as { source: string; document: { checks: { command: string; source: string }[] } };
    expect(body.source).toBe('extracted');
    expect(body.document.checks).toEqual([{ name: 'test', command: 'npm test', source: 'package.json scripts.test' }]);
    const edited = {
      ...body.document,
      checks: [{ name: 'test', command: 'node test.js --edited', source: 'edited by Ada' }],
    };
    const bad = await fetch(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ document: { checks: 'npm test' } }),
    });
    expect(bad.status).toBe(400);
    const put = await fetch(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ document: edited, author: { name: 'Ada' } }),
    });
    expect(put.status).toBe(200);
    const four = await run();
    expect([four.source, four.rebuilt, four.checks]).toEqual(['edited', false, ['node test.js --edited']]);
    expect((await fetch(`${app.url}/api/repos/${encodeURIComponent('/nowhere/repo')}/knowledge`)).status).toBe(404);
  });
});

describe('a setup that cannot reach the network', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    // One fetch attempt, so the sandbox's missing network shows at once instead of after retries.
    await remote.pushCommit('.npmrc', 'fetch-retries=0\nfetch-timeout=5000\naudit=false\nfund=false\n', 'npmrc');
    await remote.pushCommit(
      'package.json',
      JSON.stringify({
        name: 'web',
        private: true,
        scripts: { test: 'node test.js', lint: 'node lint.js' },
        dependencies: { 'left-pad': '1.3.0' },
      }),
      'package',
    );
  });
  afterAll(async () => {
    await app?.dispose();
    await remote.cleanup();
  });

  it('is reported plainly, and its checks are listed as not run, never passed', { timeout: 180_000 }, async () => {
    const model = createScriptedProvider({
      scenario: [
        { toolCalls: [{ name: 'write_file', input: { path: 'NOTES.md', content: 'notes\n' } }] },
        { text: 'Added notes.' },
      ],
    });
    app = await startTestPatchbay({ model });
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Add a notes file',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed'], 120_000);
    expect(done.status).toBe('completed');
    const events = await app.store.events(done.id);
    const checks = of(events, 'check-finished');
    // Setup runs in the agent's workspace, then again in the checkout of the commit the checks judge.
    expect(checks.map((c) => [c.phase, c.command, c.outcome])).toEqual([
      ['setup', 'npm install', 'failed'],
      ['setup', 'npm install', 'failed'],
      ['check', 'npm test', 'not-run'],
      ['check', 'npm run lint', 'not-run'],
    ]);
    expect(checks[0]!.reason).toBe('setup `npm install` could not reach the network');
    expect(checks[1]!.commit).toBe(done.result!.commit);
    expect(checks[2]!.reason).toBe('setup `npm install` could not reach the network');
    const gate = of(events, 'review-gate')[0]!;
    expect(gate.ready).toBe(false);
    expect(gate.reasons).toContain('`npm test` could not run: setup `npm install` could not reach the network');
    // Nothing setup left behind was committed.
    expect(await git(remote.remote, 'ls-tree', '--name-only', done.result!.commit!)).toBe(
      ['.npmrc', 'NOTES.md', 'README.md', 'package.json'].join('\n'),
    );
  });
});
