import { randomBytes } from 'node:crypto';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../../helpers/wait-for.ts';
import type { FakeModal } from '../../fakes/modal/fake-modal.ts';
import {
  sessionSandboxes,
  startModalBackend,
  startWebSession,
  type ModalBackend,
} from '../../helpers/modal-patchbay.ts';
import { changelogModel, expectChangelogPushed } from '../../harness/changelog-scenario.ts';

const MB = 1000 * 1000;

/**
 * A repository the size of a real one: over 50 MB of history that does not compress (random
 * bytes, so git's zlib cannot shrink it), which a fresh Modal workspace receives as one bundle of
 * the base branch, far over the 4 MiB a gRPC message may carry.
 */
describe('a Modal session on a repository with over 50 MB of history', () => {
  let remote: RemoteFixture;
  let modal: ModalBackend;
  let fake: FakeModal;
  let app: PatchbayFixture | undefined;

  beforeAll(async () => {
    remote = await createRemote();
    const scratch = join(remote.root, 'big');
    await git(remote.root, 'clone', '--quiet', remote.remote, scratch);
    for (let i = 0; i < 4; i++) {
      await writeFile(join(scratch, `blob-${i}.bin`), randomBytes(14 * MB));
      await git(scratch, 'add', '.');
      await git(scratch, 'commit', '--quiet', '-m', `Add blob ${i}`);
    }
    await git(scratch, 'push', '--quiet', 'origin', 'HEAD:refs/heads/main');
    modal = await startModalBackend();
    fake = modal.fake;
  }, 120_000);
  afterAll(async () => {
    await app?.dispose();
    await modal.close();
    await remote.cleanup();
  });

  it('prepares the workspace, runs, checkpoints and pushes, with nothing refused', { timeout: 180_000 }, async () => {
    const history = await git(remote.remote, 'count-objects', '-v');
    // Loose objects and packs, in KiB.
    const kib = (field: string) => Number(new RegExp(`^${field}: (\\d+)$`, 'm').exec(history)![1]);
    expect((kib('size') + kib('size-pack')) * 1024).toBeGreaterThan(50 * MB);

    const model = changelogModel();
    app = await modal.startPatchbay({ model });
    const id = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    const session = await waitForStatus(app, id, ['completed', 'failed'], 150_000);
    await expectChangelogPushed(app, remote, session, model);

    // The whole history reached the sandbox's checkout, byte for byte.
    const sandbox = sessionSandboxes(fake, session.id)[0]!;
    for (let i = 0; i < 4; i++)
      expect((await stat(join(sandbox.fsDir, 'workspace', `blob-${i}.bin`))).size).toBe(14 * MB);
    expect(await git(join(sandbox.fsDir, 'workspace'), 'rev-parse', 'main')).toBe(await remote.remoteBranch('main'));
    expect(fake.refusals).toEqual([]);
  });
});
