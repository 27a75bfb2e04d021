import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { EventOf, StoredEvent } from '../../src/core/events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };
const of = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.filter((e) => e.event.type === type).map((e) => e.event as EventOf<T>);

/**
 * A test that fails until a moment its commit names and passes after it: a flake whose cause (the
 * clock) lives outside the code. The agent's lib.js exports that moment, 15 s after it writes the
 * file, so the first round of checks (seconds after the commit) fails; the agent, told so, waits
 * 16 s in a command and changes nothing, and the second round on the same commit passes. (Each
 * round's checks start from an emptied workspace, so no state a check leaves can carry the flake.)
 */
const flakyTest = [
  'let until = 0;',
  "try { until = require('./lib.js'); } catch {}",
  "if (typeof until === 'number' && Date.now() < until) { console.error('Error: read ECONNRESET (simulated flake)'); process.exit(1); }",
  "console.log('ok');",
].join('\n');

describe('lessons the harness records from its own checks', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;
  const model = createScriptedProvider({
    scenario: (messages: readonly ModelMessage[]) => {
      const last = messages.findLastIndex((m) => m.role === 'user');
      const text = last >= 0 ? (messages[last] as { content: string }).content : '';
      const turn = messages.length - 1 - last;
      const step = (...turns: ScriptedTurn[]) => turns[Math.min(turn, turns.length - 1)]!;
      // Told the checks failed: it waits out the flake's moment and changes nothing (the failure
      // has nothing to do with its change).
      if (text.includes('checks on your commit'))
        return step(
          { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 16' } }] },
          { text: 'That failure is unrelated to my change; nothing to fix.' },
        );
      const until = Date.now() + 15_000;
      return step(
        { toolCalls: [{ name: 'write_file', input: { path: 'lib.js', content: `module.exports = ${until};\n` } }] },
        { text: 'Added lib.js.' },
      );
    },
  });

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit(
      'package.json',
      JSON.stringify({ name: 'flaky', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    await remote.pushCommit('.gitignore', '.flaky\n', 'ignore');
    await remote.pushCommit('test.js', `${flakyTest}\n`, 'a flaky test');
    app = await startTestPatchbay({ model, serve: true });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
  });

  it('a check that failed then passed on the same commit becomes a lesson, and the next session reads it in its knowledge document', {
    timeout: 240_000,
  }, async () => {
    const first = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Add lib.js',
      repo: remote.remote,
    });
    if (first.kind !== 'started') throw new Error(first.kind);
    const done = await waitForStatus(app, first.session.id, ['completed', 'failed', 'waiting'], 120_000);
    expect(done.status).toBe('completed');
    const checks = of(await app.store.events(done.id), 'check-finished').filter((c) => c.phase === 'check');
    expect(checks.map((c) => c.outcome)).toEqual(['failed', 'passed']);
    expect(checks[0]!.commit).toBe(checks[1]!.commit);

    const lesson =
      '`npm test` failed and then passed on the same commit with nothing changed, so it is likely flaky: run it again before changing code for its failures.';
    const key = (await app.store.events(done.id)).flatMap((e) =>
      e.event.type === 'knowledge-loaded' ? [e.event.repo] : [],
    )[0]!;
    const response = await fetch(`${app.url}/api/repos/${encodeURIComponent(key)}/knowledge`);
    expect(((await response.json()) as { lessons: { text: string }[] }).lessons.map((l) => l.text)).toEqual([lesson]);

    const before = model.requests.length;
    const second = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Add lib.js again',
      repo: remote.remote,
    });
    if (second.kind !== 'started') throw new Error(second.kind);
    await waitForStatus(app, second.session.id, ['completed', 'failed', 'waiting'], 120_000);
    // The lesson reaches the next run quoted, below its task, never in the system block.
    const request = model.requests[before]!;
    expect(request.system).not.toContain(lesson);
    const quoted = request.messages
      .flatMap((m) => (m.role === 'user' ? [m.content] : []))
      .find((t) => t.includes('A lesson an earlier Patchbay session'));
    expect(quoted).toContain(`> > ${lesson}`);
  });
});
