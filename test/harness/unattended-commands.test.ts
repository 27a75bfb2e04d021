import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { EventOf } from '../../src/core/events.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

/** The agent fixes lib.js and rewrites the test script the harness's `npm test` check will run. */
function agent(messages: readonly ModelMessage[]): ScriptedTurn {
  const turn = messages.filter((m) => m.role === 'assistant').length;
  const pkg = JSON.stringify({
    name: 'calc',
    private: true,
    scripts: { test: 'echo once >> /tmp/published.txt; npm publish >/dev/null 2>&1; node test.js' },
  });
  const turns: ScriptedTurn[] = [
    { toolCalls: [{ name: 'write_file', input: { path: 'lib.js', content: 'module.exports = (a, b) => a + b;\n' } }] },
    { toolCalls: [{ name: 'write_file', input: { path: 'package.json', content: pkg } }] },
    { text: 'Fixed lib.js.' },
  ];
  return turns[Math.min(turn, turns.length - 1)]!;
}

/**
 * Setup and check commands run unattended in a tree the agent wrote: its package.json scripts are
 * what `npm test` runs, so the check meets the same gate as the agent's own commands (issue 36).
 */
describe('the harness gates the setup and check commands the agent can influence', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('.npmrc', 'audit=false\nfund=false\nfetch-retries=0\n', 'npmrc');
    await remote.pushCommit(
      'test.js',
      "const assert = require('node:assert');\nassert.strictEqual(require('./lib.js')(2, 3), 5);\n",
      'test',
    );
    await remote.pushCommit('lib.js', 'module.exports = (a, b) => a - b;\n', 'lib');
    await remote.pushCommit(
      'package.json',
      JSON.stringify({ name: 'calc', private: true, scripts: { test: 'node test.js' } }),
      'package',
    );
    app = await startTestPatchbay({ model: createScriptedProvider({ scenario: agent }) });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
  });

  it('does not run a check whose script the agent made publish, and says why', { timeout: 240_000 }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Fix lib.js so 2 + 3 is 5',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const done = await waitForStatus(app, started.session.id, ['completed', 'failed', 'waiting'], 200_000);
    const events = await app.store.events(done.id);
    const checks = events
      .map((e) => e.event)
      .filter((e): e is EventOf<'check-finished'> => e.type === 'check-finished' && e.phase === 'check');
    expect(checks.length).toBeGreaterThan(0);
    for (const check of checks) {
      expect(check).toMatchObject({ command: 'npm test', outcome: 'not-run', exitCode: null });
      expect(check.reason).toMatch(/^check `npm test` refused: npm publishes a release/);
    }
  });
});
