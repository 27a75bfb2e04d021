import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);
const write = (path: string, content: string): ScriptedTurn => ({
  toolCalls: [{ name: 'write_file', input: { path, content } }],
});
const shell = (command: string): ScriptedTurn => ({ toolCalls: [{ name: 'run_shell', input: { command } }] });
const dep = (name: string) => ({
  [`vendor/${name}/package.json`]: JSON.stringify({ name, version: '1.0.0', main: 'index.js' }),
  [`vendor/${name}/index.js`]: 'module.exports = true;\n',
});

/**
 * The agent's moves, by how many times the harness sent failing checks back since the latest
 * request: each wrong attempt passes `npm test` in its own tree only (a helper in an ignored
 * directory, a file hidden through .git/info/exclude, a module it put in the workspace's own
 * node_modules); the last one is correct.
 */
function agent(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.findLastIndex((m) => m.role === 'user');
  const turn = messages.slice(last + 1).filter((m) => m.role === 'assistant').length;
  const step = (...turns: ScriptedTurn[]) => turns[Math.min(turn, turns.length - 1)]!;
  const texts = messages.flatMap((m) => (m.role === 'user' ? [m.content] : []));
  const request = texts.findLastIndex((t) => !t.includes('checks on your commit'));
  const rounds = texts.slice(request + 1).length;
  const asked = texts[request] ?? '';
  if (asked.includes('dep2')) {
    const pkg = JSON.stringify({
      name: 'calc',
      private: true,
      scripts: { test: 'node test.js' },
      dependencies: { dep: 'file:./vendor/dep', dep2: 'file:./vendor/dep2' },
    });
    return step(
      write('vendor/dep2/package.json', dep('dep2')['vendor/dep2/package.json']!),
      write('vendor/dep2/index.js', 'module.exports = true;\n'),
      write('package.json', pkg),
      { text: 'Added dep2.' },
    );
  }
  if (asked.includes('notes')) return step(write('NOTES.md', 'notes\n'), { text: 'Added notes.' });
  if (asked.includes('changelog')) return step(write('CHANGELOG.md', 'changes\n'), { text: 'Added a changelog.' });
  if (asked.includes('sneaky'))
    return step(write('lib.js', 'module.exports = (a, b) => a + b;\n'), { text: 'Fixed lib.' });
  switch (rounds) {
    case 0:
      return step(
        write('build/helper.js', 'module.exports = (a, b) => a + b;\n'),
        write('lib.js', "module.exports = require('./build/helper.js');\n"),
        { text: 'Fixed lib.' },
      );
    case 1:
      return step(
        write('hidden.js', 'module.exports = (a, b) => a + b;\n'),
        shell('echo /hidden.js >> .git/info/exclude'),
        write('lib.js', "module.exports = require('./hidden.js');\n"),
        { text: 'Fixed lib.' },
      );
    case 2:
      return step(
        shell("mkdir -p node_modules/extra && echo 'module.exports = (a, b) => a + b;' > node_modules/extra/index.js"),
        write('lib.js', "module.exports = require('extra');\n"),
        { text: 'Fixed lib.' },
      );
    default:
      return step(write('lib.js', 'module.exports = (a, b) => a + b;\n'), { text: 'Fixed lib for real.' });
  }
}

describe('checks run on a fresh checkout of exactly the commit (real worker, bubblewrap sandbox, git)', () => {
  let remote: RemoteFixture;
  let sneaky: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    const files = {
      '.npmrc': 'audit=false\nfund=false\nfetch-retries=0\n',
      '.gitignore': 'build/\nnode_modules/\n',
      ...dep('dep'),
      'test.js':
        "const assert = require('node:assert');\nrequire('dep');\nassert.strictEqual(require('./lib.js')(2, 3), 5);\nconsole.log('ok');\n",
      'lib.js': 'module.exports = (a, b) => a - b;\n',
    };
    // pushCommit writes into the fixture's scratch clone, which has no directories of its own.
    const push = async (fixture: RemoteFixture, path: string, content: string) => {
      await mkdir(join(fixture.root, 'scratch', dirname(path)), { recursive: true });
      await fixture.pushCommit(path, content, path);
    };
    remote = await createRemote();
    for (const [path, content] of Object.entries(files)) await push(remote, path, content);
    await remote.pushCommit(
      'package.json',
      JSON.stringify({
        name: 'calc',
        private: true,
        scripts: { test: 'node test.js' },
        dependencies: { dep: 'file:./vendor/dep' },
      }),
      'package',
    );
    // A test script that commits and rewrites a file after the test passed.
    sneaky = await createRemote();
    for (const [path, content] of Object.entries(files)) await push(sneaky, path, content);
    const test =
      "node test.js && git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m sneaky && echo 'module.exports = 0;' > lib.js";
    await sneaky.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test }, dependencies: { dep: 'file:./vendor/dep' } }),
      'package',
    );
    app = await startTestPatchbay({ model: createScriptedProvider({ scenario: agent }) });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
    await sneaky?.cleanup();
  });

  it("fails a commit that needs an ignored file, an excluded file or the workspace's own node_modules, and passes the self-contained one", {
    timeout: 300_000,
  }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Fix lib.js so 2 + 3 is 5',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed', 'waiting'], 240_000);
    expect(done.status).toBe('completed');
    const events = await app.store.events(done.id);
    const checks = of(events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => c.outcome)).toEqual(['failed', 'failed', 'failed', 'passed']);
    const logs = checks.map((c) => `${c.logHead}${c.logTail}`);
    expect(logs[0]).toContain("Cannot find module './build/helper.js'");
    expect(logs[1]).toContain("Cannot find module './hidden.js'");
    expect(logs[2]).toContain("Cannot find module 'extra'");
    expect(checks[3]!.commit).toBe(done.result?.commit);
    expect(await git(remote.remote, 'show', `${done.result!.commit}:lib.js`)).toBe('module.exports = (a, b) => a + b;');
    // Setup ran in the workspace, then once in the first checkout; later rounds reused its output.
    const setups = of(events, 'check-finished').filter((c) => c.phase === 'setup');
    expect(setups.map((s) => [s.command, s.outcome])).toEqual([
      ['npm install', 'passed'],
      ['npm install', 'passed'],
    ]);
    expect(setups[1]!.commit).toBe(checks[0]!.commit);
  });

  it('runs setup again when a lockfile input changes, and on a reaped workspace', { timeout: 420_000 }, async () => {
    const id = (await app.store.list({ limit: 10 })).find((s) => s.repo === remote.remote)!.id;
    const setupsOf = async () =>
      of(await app.store.events(id), 'check-finished').filter((c) => c.phase === 'setup').length;
    const before = await setupsOf();
    await app.service.sendMessage(id, alice, 'also add dep2 as a dependency');
    await waitForStatus(app, id, ['running'], 30_000).catch(() => undefined);
    const second = await waitForStatus(app, id, ['completed', 'failed', 'waiting'], 240_000);
    expect(second.status).toBe('completed');
    // package.json changed: the checkout's setup ran again; the workspace's setup key (its base) did not.
    expect((await setupsOf()) - before).toBe(1);

    // The next run starts on the commit whose package.json changed: the workspace's setup runs again
    // (its key follows the lockfile inputs of HEAD, not the base's), then the new commit's checkout's.
    await app.service.sendMessage(id, alice, 'also add a changelog');
    await waitForStatus(app, id, ['running'], 30_000).catch(() => undefined);
    const changelog = await waitForStatus(app, id, ['completed', 'failed', 'waiting'], 240_000);
    expect(changelog.status).toBe('completed');
    const afterLockfile = of(await app.store.events(id), 'check-finished').slice(-3);
    expect(afterLockfile.map((c) => [c.phase, c.outcome, c.commit])).toEqual([
      ['setup', 'passed', second.result?.commit],
      ['setup', 'passed', changelog.result?.commit],
      ['check', 'passed', changelog.result?.commit],
    ]);

    expect(await app.sandboxes!.reap(new Date(Date.now() + 400 * 24 * 3600_000))).toContain(id);
    await app.service.sendMessage(id, alice, 'also add notes');
    await waitForStatus(app, id, ['running'], 30_000).catch(() => undefined);
    const third = await waitForStatus(app, id, ['completed', 'failed', 'waiting'], 240_000);
    expect(third.status).toBe('completed');
    const events = await app.store.events(id);
    const checks = of(events, 'check-finished');
    // A new workspace: setup in it and in its checkout, and the check on the new commit passed.
    expect(checks.slice(-3).map((c) => [c.phase, c.outcome])).toEqual([
      ['setup', 'passed'],
      ['setup', 'passed'],
      ['check', 'passed'],
    ]);
    expect(checks.at(-1)!.commit).toBe(third.result?.commit);
  });

  it('pushes the judged commit when a check commits and rewrites files', { timeout: 240_000 }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Fix lib.js so 2 + 3 is 5 (sneaky)',
      repo: sneaky.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed', 'waiting'], 200_000);
    expect(done.status).toBe('completed');
    const events = await app.store.events(done.id);
    const checks = of(events, 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => [c.outcome, c.commit])).toEqual([['passed', done.result?.commit]]);
    expect(of(events, 'branch-pushed').map((p) => p.commit)).toEqual([done.result?.commit]);
    expect(of(events, 'review-gate').map((g) => g.commit)).toEqual([done.result?.commit]);
    expect(await git(sneaky.remote, 'log', '--format=%s', '-1', done.branch!)).not.toBe('sneaky');
    expect(await git(sneaky.remote, 'show', `${done.branch}:lib.js`)).toBe('module.exports = (a, b) => a + b;');
  });
});
