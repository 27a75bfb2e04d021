import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, git, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../helpers/wait-for.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice Doe', email: 'alice@example.com' };

/**
 * A git command killed mid-way (the server killed, or a run cut off at shutdown or by a stop)
 * leaves `.git/index.lock` in the workspace; git never removes it after a SIGKILL. The next run in
 * that workspace, a resumed one or a follow-up, must still commit and push: crash trials saw a
 * resumed run fail with "Unable to create '/workspace/.git/index.lock': File exists" and its work
 * unpushed.
 */
describe('a workspace with a lock file a killed git left behind', () => {
  let remote: RemoteFixture;
  let app: PatchbayFixture;

  beforeAll(async () => {
    remote = await createRemote();
    app = await startTestPatchbay({
      model: createScriptedProvider({
        scenario: [
          { toolCalls: [{ name: 'write_file', input: { path: 'one.txt', content: 'one\n' } }] },
          { text: 'Wrote one.txt.' },
          { toolCalls: [{ name: 'write_file', input: { path: 'two.txt', content: 'two\n' } }] },
          { text: 'Wrote two.txt.' },
        ],
      }),
      env: { PATCHBAY_ALLOW_LOCAL_REPOS: 'true' },
    });
  });
  afterAll(async () => {
    await app.dispose();
    await remote.cleanup();
  });

  it('the next run commits and pushes all the same', { timeout: 120_000 }, async () => {
    const started = await app.service.start({
      thread: { source: 'web' },
      actor: alice,
      text: 'Write one, then two',
      repo: remote.remote,
    });
    if (started.kind !== 'started') throw new Error(started.kind);
    const id = started.session.id;
    const first = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    expect(first.status).toBe('completed');

    // What `git commit` killed between taking its lock and renaming it leaves.
    await writeFile(join(app.dataDir, 'workspaces', id, '.git', 'index.lock'), '');
    await app.service.sendMessage(id, alice, 'now write two');
    expect((await app.store.get(id))!.status).toBe('queued');
    const second = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
    expect(second.error).toBeNull();
    expect(second.status).toBe('completed');
    const tip = await remote.remoteBranch(second.branch!);
    expect(await git(remote.remote, 'show', `${tip}:one.txt`)).toBe('one');
    expect(await git(remote.remote, 'show', `${tip}:two.txt`)).toBe('two');
  });
});
