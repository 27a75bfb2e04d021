import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';
import { loseWorkspace } from '../sandbox/sandbox-test-helpers.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

/**
 * A run continued in a workspace that lacks the earlier runs' work, as on another worker (another
 * host): the workspace is removed between the runs. With the checkpoint stored after the file
 * changes, the work is restored and pushed whole; without one, the run fails saying why, never
 * "finished with no changes".
 */
describe('continuing a session in a workspace that lacks its work', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('OLD.md', 'old\n', 'Add OLD.md');
    app = await startTestPatchbay({
      model: createScriptedProvider({
        scenario: [
          { toolCalls: [{ name: 'write_file', input: { path: 'FIRST.md', content: 'first\n' } }] },
          {
            toolCalls: [
              {
                name: 'run_shell',
                input: { command: 'rm OLD.md; mkdir -p deep/er && echo untracked > deep/er/NOTE.txt' },
              },
            ],
          },
          { toolCalls: [{ name: 'ask_user', input: { question: 'Go on?', choices: ['yes', 'no'] } }] },
          { toolCalls: [{ name: 'write_file', input: { path: 'SECOND.md', content: 'second\n' } }] },
          { text: 'Wrote FIRST and SECOND, removed OLD.' },
        ],
      }),
      env: { PATCHBAY_ALLOW_LOCAL_REPOS: 'true' },
    });
  });
  afterAll(async () => {
    await app?.dispose();
    await remote?.cleanup();
  });

  /** Runs until the question, then removes the workspace (and the checkpoint, if asked) and answers. */
  async function continueElsewhere(dropCheckpoint: boolean) {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Write files, ask, write more',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    expect((await waitForStatus(app, id, ['waiting', 'failed', 'completed'], 60_000)).status).toBe('waiting');
    await loseWorkspace(app.dataDir, id);
    if (dropCheckpoint) await app.database.db.deleteFrom('session_checkpoints').where('session_id', '=', id).execute();
    await app.service.sendMessage(id, alice, 'yes');
    return waitForStatus(app, id, ['completed', 'failed'], 60_000);
  }

  it('restores the checkpoint, and the pushed branch holds all of the work', { timeout: 120_000 }, async () => {
    const done = await continueElsewhere(false);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    const tip = await remote.remoteBranch(done.branch!);
    expect(await git(remote.remote, 'show', `${tip}:FIRST.md`)).toBe('first');
    expect(await git(remote.remote, 'show', `${tip}:SECOND.md`)).toBe('second');
    expect(await git(remote.remote, 'show', `${tip}:deep/er/NOTE.txt`)).toBe('untracked');
    await expect(git(remote.remote, 'show', `${tip}:OLD.md`)).rejects.toThrow();
  });

  it('without a checkpoint, fails saying the work cannot be restored', { timeout: 120_000 }, async () => {
    const done = await continueElsewhere(true);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(
      /changed files \(2 steps since the last push\) in a workspace this worker does not have, and no checkpoint/,
    );
    expect(done.result?.commit).toBeUndefined();
  });
});
