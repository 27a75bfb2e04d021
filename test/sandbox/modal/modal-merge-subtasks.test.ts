import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import { createMergeSubtasksTool } from '../../../src/agent/merge-subtasks-tool.ts';
import type { SubtaskLine } from '../../../src/core/subtasks.ts';
import { prepareRemoteWorkspace } from '../../../src/git/prepare-remote-workspace.ts';
import { bringBranches } from '../../../src/git/subtask-branches.ts';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { startModalBackend, type ModalBackend } from '../../helpers/modal-patchbay.ts';

const log = pino({ level: 'silent' });
const signal = () => AbortSignal.timeout(60_000);

/**
 * Gathering on Modal: the host cannot see into the sandbox, so the sub-tasks' commits reach the
 * parent's workspace as a bundle put into the sandbox (putBytes) and fetched there. Through the
 * provider Patchbay builds from the environment, the real SDK and the loopback fake Modal.
 */
describe('merge_subtasks in a Modal sandbox', () => {
  let remote: RemoteFixture;
  let modal: ModalBackend;
  let app: PatchbayFixture;
  let sandbox: Sandbox;

  beforeAll(async () => {
    remote = await createRemote();
    await remote.pushCommit('one.txt', 'one\n', 'Sub-task 1', 'patchbay/p1-sub-1');
    await git(join(remote.root, 'scratch'), 'checkout', '--quiet', 'main');
    await remote.pushCommit('two.txt', 'two\nlines\n', 'Sub-task 2', 'patchbay/p1-sub-2');
    modal = await startModalBackend();
    app = await modal.startPatchbay();
    // The parent's row, which Modal's sandbox record belongs to (no run is queued for it).
    await app.store.create({
      id: 'p1',
      repo: remote.remote,
      prompt: 'Gather the parts',
      title: 'Gather the parts',
      requester: { source: 'web', id: 'ada', name: 'Ada' },
      thread: { source: 'web' },
    });
    sandbox = await app.sandboxes!.acquire('p1', { network: 'none' });
    await prepareRemoteWorkspace({
      sandbox,
      repo: remote.remote,
      branch: 'patchbay/p1',
      dataDir: app.dataDir,
      log,
      signal: signal(),
    });
  }, 90_000);
  afterAll(async () => {
    await sandbox?.release();
    await app?.dispose();
    await modal.close();
    await remote.cleanup();
  });

  it('brings the branches in as a bundle and merges both, one merge commit each', { timeout: 90_000 }, async () => {
    const children: SubtaskLine[] = [];
    for (const index of [1, 2]) {
      const branch = `patchbay/p1-sub-${index}`;
      const commit = await remote.remoteBranch(branch);
      children.push({
        sessionId: `c${index}`,
        index,
        title: `Part ${index}`,
        repo: remote.remote,
        status: 'completed',
        branch,
        commit,
      });
    }
    const tool = createMergeSubtasksTool({
      children: async () => children,
      repoOf: async () => remote.remote,
      bringBranches: (request) => bringBranches({ ...request, dataDir: app.dataDir, log }),
    });

    const output = await tool.execute({}, { sandbox, sessionId: 'p1', signal: signal(), log });

    expect(output.isError ?? false, output.content).toBe(false);
    expect(output.content).toContain('Merged 2 of 2 sub-task branches.');
    expect(output.content).toContain('two.txt +2 -0');
    const merges = await sandbox.exec('git log --merges --format=%s', { signal: signal() });
    expect(merges.stdout.trim().split('\n')).toEqual(['Merge sub-task 2: Part 2', 'Merge sub-task 1: Part 1']);
    expect(await sandbox.readFile('one.txt')).toBe('one\n');
    const tips = await sandbox.exec("git for-each-ref --format='%(refname) %(objectname)' refs/patchbay/subtasks/", {
      signal: signal(),
    });
    expect(tips.stdout).toContain(
      `refs/patchbay/subtasks/patchbay/p1-sub-2 ${await remote.remoteBranch('patchbay/p1-sub-2')}`,
    );
    expect((await sandbox.exec('ls /tmp/patchbay-subtasks.bundle', { signal: signal() })).exitCode).not.toBe(0);
    expect(modal.fake.refusals).toEqual([]);
  });
});
