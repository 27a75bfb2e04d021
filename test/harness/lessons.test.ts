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
 * A test that fails every other run: it leaves a marker when it fails and removes it when it passes.
 * Checks run in a fresh checkout of the commit each round, so the marker lives outside it (beside
 * it, in the workspace's .git), as a real flake's cause (a service, the clock) lives outside the code.
 */
const flakyTest = [
  "const fs = require('node:fs');",
  // Each round's checkout is new and the checks' workspace is emptied, but for the setup cache dir
  // of the key in use ('-' with no setup): the only place a flake's state outlives a round.
  "const marker = require('node:path').join(__dirname, '..', 'setup', '-', 'flaky-marker');",
  "fs.mkdirSync(require('node:path').dirname(marker), { recursive: true });",
  "if (!fs.existsSync(marker)) { fs.writeFileSync(marker, '1'); console.error('Error: read ECONNRESET (simulated flake)'); process.exit(1); }",
  'fs.unlinkSync(marker);',
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
      // Told the checks failed: it changes nothing (the failure has nothing to do with its change).
      if (text.includes('checks on your commit'))
        return { text: 'That failure is unrelated to my change; nothing to fix.' };
      return step(
        { toolCalls: [{ name: 'write_file', input: { path: 'lib.js', content: 'module.exports = 1;\n' } }] },
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
