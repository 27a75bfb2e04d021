import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../../helpers/wait-for.ts';
import type { FakeModal } from '../../fakes/modal/fake-modal.ts';
import {
  releasedModalSandbox,
  sessionSandboxes,
  startModalBackend,
  startWebSession,
  type ModalBackend,
} from '../../helpers/modal-patchbay.ts';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import { changelogRequester } from '../../harness/changelog-scenario.ts';

/**
 * A session whose Modal snapshot expired (MODAL_SNAPSHOT_TTL_DAYS) and that has no database
 * checkpoint either continues from the branch it pushed. Its own fake Modal: it moves the clock
 * past every snapshot's TTL.
 */
describe('a Modal session whose snapshot expired, with no stored checkpoint', () => {
  let remote: RemoteFixture;
  let fake: FakeModal;
  let modal: ModalBackend;

  beforeAll(async () => {
    remote = await createRemote();
    modal = await startModalBackend();
    fake = modal.fake;
  });
  afterAll(async () => {
    await modal.close();
    await remote.cleanup();
  });

  it('continues from the pushed branch', { timeout: 120_000 }, async () => {
    // First run: a draft, pushed. The follow-up reads it back and adds to it.
    const model = createScriptedProvider({
      scenario: (messages) => {
        const turn = messages.filter((m) => m.role === 'assistant').length;
        if (turn === 0) return { toolCalls: [{ name: 'write_file', input: { path: 'NOTES.md', content: 'draft\n' } }] };
        if (turn === 1) return { text: 'Drafted the notes.' };
        if (turn === 2)
          return {
            toolCalls: [
              { name: 'run_shell', input: { command: 'cat NOTES.md' } },
              { name: 'write_file', input: { path: 'MORE.md', content: 'more\n' } },
            ],
          };
        return { text: 'Added more.' };
      },
    });
    const app = await modal.startPatchbay({ model });
    try {
      const id = await startWebSession(app, { text: 'Write some notes', repo: remote.remote });
      const first = await waitForStatus(app, id, ['completed', 'failed'], 60_000);
      expect(first.status, first.error ?? '').toBe('completed');
      const record = await releasedModalSandbox(app, id);
      expect(await git(remote.remote, 'show', `${first.result!.commit}:NOTES.md`)).toBe('draft');

      // Nothing left but the pushed branch: no stored checkpoint, the container lost with no exit
      // snapshot, and 31 days on, Modal has deleted the release snapshot (and the setup image).
      await app.database.db.deleteFrom('session_checkpoint_increments').where('session_id', '=', id).execute();
      await app.database.db.deleteFrom('session_checkpoints').where('session_id', '=', id).execute();
      fake.kill(record.sandbox_id!, {}, { exitSnapshot: false });
      fake.advance(31 * 86_400_000);

      await app.service.sendMessage(id, changelogRequester, 'Add more to the notes');
      // Done when the session ends again with a result other than the first run's.
      const done = await waitFor(
        async () => {
          const session = await app.store.get(id);
          return (
            session &&
            ['completed', 'failed'].includes(session.status) &&
            session.result?.commit !== first.result!.commit &&
            session
          );
        },
        'the follow-up to end',
        60_000,
      );
      expect(done.status, done.error ?? '').toBe('completed');
      expect(done.result!.commit).not.toBe(first.result!.commit);
      expect(await git(remote.remote, 'show', `${done.result!.commit}:NOTES.md`)).toBe('draft');
      expect(await git(remote.remote, 'show', `${done.result!.commit}:MORE.md`)).toBe('more');
      expect(await git(remote.remote, 'rev-list', '--count', `${first.result!.commit}..${done.result!.commit}`)).toBe(
        '1',
      );
      const shell = model.requests.at(-1)!.messages.findLast((m) => m.role === 'tool' && m.name === 'run_shell');
      expect(shell?.role === 'tool' && shell.content).toContain('draft');
      // A new sandbox from the base image, not from a snapshot.
      const ours = sessionSandboxes(fake, id);
      expect(ours).toHaveLength(2);
      expect(fake.images.get(ours[1]!.imageId)?.kind).not.toBe('snapshot');
    } finally {
      await app.dispose();
    }
    expect(fake.refusals).toEqual([]);
  });
});
