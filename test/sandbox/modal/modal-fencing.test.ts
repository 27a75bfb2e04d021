import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { waitForStatus } from '../../helpers/wait-for.ts';
import type { FakeModal } from '../../fakes/modal/fake-modal.ts';
import {
  modalSandboxRecord,
  releasedModalSandbox,
  startModalBackend,
  startWebSession,
  type ModalBackend,
} from '../../helpers/modal-patchbay.ts';
import { changelogModel, expectChangelogPushed } from '../../harness/changelog-scenario.ts';
import { createRunLeases, type RunLease } from '../../../src/sessions/worker/run-leases.ts';

/**
 * On Modal a take-over gets the session's sandbox only through the run lease: a worker whose lease
 * lapsed (it was paused) and was taken over cannot run commands in, snapshot, end or reattach the
 * sandbox the new run works in. Through the provider Patchbay builds from the environment, the
 * real SDK and the loopback fake Modal, with leases taken through the lease API as two workers do.
 */
describe('a Modal sandbox under run leases', () => {
  let remote: RemoteFixture;
  let fake: FakeModal;
  let app: PatchbayFixture;
  let modal: ModalBackend;
  let sessionId: string;

  const record = () => modalSandboxRecord(app, sessionId);
  const take = async (owner: string): Promise<RunLease> => {
    const taken = await createRunLeases({ db: app.database.db, owner, leaseMs: 60_000 }).take(sessionId);
    if (taken.kind !== 'taken') throw new Error(`lease ${taken.kind}`);
    return taken.lease;
  };

  beforeAll(async () => {
    remote = await createRemote();
    modal = await startModalBackend();
    fake = modal.fake;
    const model = changelogModel();
    app = await modal.startPatchbay({ model });
    sessionId = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    await expectChangelogPushed(
      app,
      remote,
      await waitForStatus(app, sessionId, ['completed', 'failed'], 60_000),
      model,
    );
    await releasedModalSandbox(app, sessionId);
  }, 90_000);
  afterAll(async () => {
    await app?.dispose();
    await modal.close();
    await remote.cleanup();
  });

  it('refuses every call of a run that was taken over, while the run that took over works on', {
    timeout: 60_000,
  }, async () => {
    const first = await take('worker-1');
    const stale = await app.sandboxes!.acquire(sessionId, { network: 'proxy', epoch: first.epoch });
    await stale.exec('echo one > FIRST.md');

    // Worker 1 pauses past its lease; worker 2 takes the run over and reattaches to the same sandbox.
    await app.database.db
      .updateTable('sessions')
      .set({ lease_expires_at: new Date(Date.now() - 1_000) })
      .where('id', '=', sessionId)
      .execute();
    const second = await take('worker-2');
    expect(second.epoch).toBe(first.epoch + 1);
    const sandboxId = (await record()).sandbox_id!;
    const current = await app.sandboxes!.acquire(sessionId, { network: 'proxy', epoch: second.epoch });
    expect((await record()).sandbox_id).toBe(sandboxId);

    // Worker 1 wakes up.
    const images = fake.images.size;
    await expect(stale.exec('echo stale > STALE.md')).rejects.toMatchObject({ code: 'lease_lost' });
    await expect(stale.writeFile('STALE.md', 'stale\n')).rejects.toMatchObject({ code: 'lease_lost' });
    await expect(stale.getBytes!('FIRST.md', 1024)).rejects.toMatchObject({ code: 'lease_lost' });
    await stale.checkpoint!();
    await expect(stale.destroy()).rejects.toMatchObject({ code: 'lease_lost' });
    // A new acquire under the old epoch: with the sandbox near its time limit it would otherwise
    // snapshot the sandbox and end it under the run that took over.
    await app.database.db
      .updateTable('modal_sandboxes')
      .set({ expires_at: new Date(Date.now() + 60_000) })
      .where('session_id', '=', sessionId)
      .execute();
    await expect(app.sandboxes!.acquire(sessionId, { network: 'proxy', epoch: first.epoch })).rejects.toMatchObject({
      code: 'lease_lost',
    });
    expect(fake.images.size).toBe(images);
    expect(fake.sandboxes.get(sandboxId)!.result).toBeUndefined();

    // The run that took over has the sandbox as it left it, and nothing of the stale run's.
    try {
      expect((await current.exec('cat FIRST.md; ls STALE.md 2>&1 || true')).stdout).toMatch(/^one\n.*No such file/s);
    } finally {
      await current.release();
    }
    expect(await record()).toMatchObject({ sandbox_id: sandboxId, released: true });
    expect(fake.refusals).toEqual([]);
  });
});
