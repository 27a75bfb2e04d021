import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, type RemoteFixture } from '../../git/git-fixture.ts';
import { startTestPatchbay, waitFor, waitForStatus, type PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { COVERED, startFakeModal, type FakeModal } from '../../fakes/modal/fake-modal.ts';
import { changelogModel, changelogRequester, expectChangelogPushed } from '../../harness/changelog-scenario.ts';

/**
 * SANDBOX=modal end to end: the real `modal` SDK (0.11.1) against the loopback fake Modal
 * (test/fakes/modal), reached through MODAL_SERVER_URL with the token pair in the environment, and
 * the whole Patchbay (queue, worker, harness, runner, host mirror and push) on a test database.
 *
 * What the fake covers, exactly (COVERED in fake-modal.ts; anything else is refused and fails the test):
 * - control plane `modal.client.ModalClient`: AuthTokenGet, EnvironmentGetOrCreate, AppGetOrCreate,
 *   ImageGetOrCreate, ImageJoinStreaming, ImageFromId, SandboxCreateV2, SandboxGetTaskIdV2,
 *   SandboxGetCommandRouterAccess, SandboxWaitV2, SandboxTerminateV2, SandboxListV2, SandboxTagsGetV2;
 * - command router `modal.task_command_router.TaskCommandRouter`: TaskExecStart, TaskExecStdioRead,
 *   TaskExecStdinWrite, TaskExecWait, TaskExecPoll, TaskSnapshotFilesystem.
 * Commands run for real in bubblewrap over a per-sandbox directory tree (/workspace, /tmp, /root);
 * a filesystem snapshot is a copy of that tree, and an image made from it starts a sandbox with it.
 */
describe('Modal sandboxes through the real SDK and a loopback Modal', () => {
  let remote: RemoteFixture;
  let fake: FakeModal;
  let app: PatchbayFixture | undefined;
  let configDir: string;
  const saved = { url: process.env.MODAL_SERVER_URL, config: process.env.MODAL_CONFIG_PATH };

  beforeAll(async () => {
    remote = await createRemote();
    fake = await startFakeModal();
    configDir = await mkdtemp(join(tmpdir(), 'modal-config-'));
    // The SDK reads its endpoint and profile file from the environment only.
    process.env.MODAL_SERVER_URL = fake.url;
    process.env.MODAL_CONFIG_PATH = join(configDir, 'absent.toml');
  });
  afterEach(async () => {
    await app?.dispose();
    app = undefined;
  });
  afterAll(async () => {
    if (saved.url === undefined) delete process.env.MODAL_SERVER_URL;
    else process.env.MODAL_SERVER_URL = saved.url;
    if (saved.config === undefined) delete process.env.MODAL_CONFIG_PATH;
    else process.env.MODAL_CONFIG_PATH = saved.config;
    await fake.close();
    await remote.cleanup();
    await rm(configDir, { recursive: true, force: true });
  });

  const modalEnv = () => ({ SANDBOX: 'modal', MODAL_TOKEN_ID: fake.tokenId, MODAL_TOKEN_SECRET: fake.tokenSecret, MODAL_APP_NAME: 'patchbay-test' });

  it('covers exactly the calls listed above', () => {
    expect(COVERED.controlPlane).toHaveLength(13);
    expect(COVERED.router).toHaveLength(6);
  });

  it('runs the same tool-loop scenario as the local sandbox: writes, checks, commits and pushes, with no token in the sandbox', async () => {
    const model = changelogModel();
    app = await startTestPatchbay({ model, env: modalEnv() });
    const started = await app.service.start({ thread: { source: 'web' }, actor: changelogRequester, text: 'Add a changelog', repo: remote.remote });
    if (started.kind !== 'started') throw new Error(started.kind);
    const session = await waitForStatus(app, started.session.id, ['completed', 'failed'], 60_000);
    await expectChangelogPushed(app, remote, session, model);

    const sandboxes = [...fake.sandboxes.values()].filter((sb) => sb.tags.some((t) => t.tagName === 'patchbay-session' && t.tagValue === session.id));
    expect(sandboxes).toHaveLength(1);
    const [sandbox] = sandboxes;
    // Network blocked (SANDBOX_EGRESS_ALLOW=none leaves no domain to allow), the workspace as workdir.
    expect(sandbox!.definition).toMatchObject({ networkAccess: { networkAccessType: 2, allowedDomains: [], allowedCidrs: [] }, workdir: '/workspace', timeoutSecs: 120 * 60, idleTimeoutSecs: 15 * 60 });
    // The work happened in the Modal sandbox's own filesystem, which never held a credential.
    expect(await readFile(join(sandbox!.fsDir, 'workspace', 'CHANGELOG.md'), 'utf8')).toBe('# Changes\n\n- first\n');
    expect(await readFile(join(sandbox!.fsDir, 'workspace', '.git', 'config'), 'utf8')).toContain('url = https://patchbay.invalid/');
    // Let go with a snapshot, which the session's record points at.
    expect(fake.calls).toContain('TaskSnapshotFilesystem');
    // The run lets go of the sandbox (with a snapshot) just after the session's status is written.
    const record = await waitFor(async () => {
      const row = await app!.database.db.selectFrom('modal_sandboxes').selectAll().where('session_id', '=', session.id).executeTakeFirst();
      return row?.released && row;
    }, 'the sandbox to be released');
    expect(record).toMatchObject({ sandbox_id: sandbox!.sandboxId, released: true });
    expect(fake.images.get(record.image_id!)).toMatchObject({ kind: 'snapshot', fromSandbox: sandbox!.sandboxId });
    expect(fake.refusals).toEqual([]);
  });
});
