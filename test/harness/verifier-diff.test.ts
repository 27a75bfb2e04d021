import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { passingVerdict } from '../helpers/scripted-verifier.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

/** A function long enough that a one-line change's usual three lines of context do not show its head. */
const body = (bound: string) =>
  [
    'function clamp(x, lo, hi) {',
    '  // step 1',
    '  // step 2',
    '  // step 3',
    '  // step 4',
    '  // step 5',
    '  // step 6',
    `  return ${bound};`,
    '}',
    'module.exports = clamp;',
    '',
  ].join('\n');

describe('what the verifier reads', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;
  const verifier = createScriptedProvider({
    model: 'scripted-verifier',
    scenario: () => ({ toolCalls: [{ name: 'record_verdict', input: passingVerdict }] }),
  });
  const agent = createScriptedProvider({
    scenario: [
      { toolCalls: [{ name: 'write_file', input: { path: 'clamp.js', content: body('Math.min(hi, x)') } }] },
      { text: 'Fixed the upper bound.' },
    ],
  });

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('clamp.js', body('Math.max(lo, x)'), 'clamp');
    app = await startTestPatchbay({ model: agent, verifierModel: verifier });
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
  });

  it('gets each changed function whole, so a dropped parameter is in sight', { timeout: 120_000 }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Fix clamp: it ignores the upper bound',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    expect((await waitForStatus(app, started.session.id, ['completed', 'failed', 'waiting'], 90_000)).status).toBe(
      'completed',
    );
    const prompt = (verifier.requests[0]!.messages[0] as { content: string }).content;
    const diff = prompt.slice(prompt.indexOf('# Diff against the base'));
    expect(diff).toContain('\n function clamp(x, lo, hi) {\n');
    expect(diff).toContain('-  return Math.max(lo, x);\n+  return Math.min(hi, x);');
    expect(verifier.requests[0]!.system).toContain('a parameter or a branch that is no longer used');
  });
});
