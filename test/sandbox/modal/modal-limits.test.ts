import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRemote, git, type RemoteFixture } from '../../git/git-fixture.ts';
import type { PatchbayFixture } from '../../helpers/patchbay-fixture.ts';
import { waitFor, waitForStatus } from '../../helpers/wait-for.ts';
import type { FakeModal } from '../../fakes/modal/fake-modal.ts';
import {
  modalSandboxRecord,
  releasedModalSandbox,
  startModalBackend,
  startWebSession,
  type ModalBackend,
} from '../../helpers/modal-patchbay.ts';
import { createScriptedProvider } from '../../../src/models/scripted-provider.ts';
import { changelogModel, changelogRequester, expectChangelogPushed } from '../../harness/changelog-scenario.ts';
import { checkpointWork } from '../../../src/harness/checkpoint/checkpoint-work.ts';
import { createCheckpointStore } from '../../../src/sessions/harness-stores/pg-checkpoint-store.ts';

const MiB = 1024 * 1024;
const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

/**
 * SANDBOX=modal at the sizes and limits of the real service, through the real SDK and the loopback
 * fake (which refuses request messages over 4 MiB and commands over 64 KiB, expires snapshots at
 * their TTL, ends idle sandboxes, and can slow or break output streams as a real connection does).
 * One session runs first; the later tests use its sandbox through the provider Patchbay built from
 * the environment.
 */
describe('Modal at real sizes', () => {
  let remote: RemoteFixture;
  let fake: FakeModal;
  let app: PatchbayFixture;
  let modal: ModalBackend;
  let sessionId: string;

  const record = () => modalSandboxRecord(app, sessionId);
  const released = () => releasedModalSandbox(app, sessionId);
  const acquire = () => app.sandboxes!.acquire(sessionId, { network: 'proxy' });

  beforeAll(async () => {
    remote = await createRemote();
    modal = await startModalBackend();
    fake = modal.fake;
    const model = changelogModel();
    app = await modal.startPatchbay({
      model,
      env: { MODAL_SANDBOX_TIMEOUT_MINUTES: '120', RUN_MAX_MINUTES: '60' },
    });
    sessionId = await startWebSession(app, { text: 'Add a changelog', repo: remote.remote });
    await expectChangelogPushed(
      app,
      remote,
      await waitForStatus(app, sessionId, ['completed', 'failed'], 60_000),
      model,
    );
    await released();
  }, 90_000);
  afterAll(async () => {
    await app?.dispose();
    await modal.close();
    await remote.cleanup();
  });

  it('moves files and input larger than a gRPC message into the sandbox in chunks, and out of it whole', {
    timeout: 60_000,
  }, async () => {
    const data = randomBytes(9 * MiB);
    const sandbox = await acquire();
    try {
      await sandbox.putBytes!('/tmp/big.bin', data);
      expect((await sandbox.exec('sha256sum /tmp/big.bin')).stdout.split(' ')[0]).toBe(sha256(data));
      expect(sha256(await sandbox.getBytes!('/tmp/big.bin', 32 * MiB))).toBe(sha256(data));
      const input = 'z'.repeat(5 * MiB);
      expect((await sandbox.exec('sha256sum', { stdin: input })).stdout.split(' ')[0]).toBe(sha256(Buffer.from(input)));
    } finally {
      await sandbox.release();
    }
    expect(fake.refusals).toEqual([]);
  });

  it('reads output until its stream ends, however long after the command exits', { timeout: 60_000 }, async () => {
    const data = randomBytes(12 * 1000 * 1000);
    const sandbox = await acquire();
    try {
      await sandbox.putBytes!('/tmp/slow.bin', data);
      // 2 MB/s: the 12 MB take six seconds to arrive, all of it after `cat` has exited.
      fake.throttleStdio(2_000_000);
      const back = await sandbox.getBytes!('/tmp/slow.bin', 32 * MiB);
      expect(back.length).toBe(data.length);
      expect(sha256(back)).toBe(sha256(data));
    } finally {
      fake.throttleStdio(undefined);
      await sandbox.release();
    }
    expect(fake.refusals).toEqual([]);
  });

  it('fails loudly when an output stream ends early or breaks, or input is refused, instead of returning part of a file or waiting', {
    timeout: 60_000,
  }, async () => {
    const sandbox = await acquire();
    try {
      await sandbox.putBytes!('/tmp/cut.bin', randomBytes(3 * MiB));
      fake.faultStdio('/tmp/cut.bin', { afterBytes: MiB, kind: 'end' });
      await expect(sandbox.getBytes!('/tmp/cut.bin', 32 * MiB)).rejects.toMatchObject({
        code: 'sandbox_failed',
        message: expect.stringMatching(/\/tmp\/cut\.bin .*arrived incomplete/),
      });
      fake.faultStdio('/tmp/cut.bin', { afterBytes: MiB, kind: 'error' });
      await expect(sandbox.getBytes!('/tmp/cut.bin', 32 * MiB)).rejects.toMatchObject({ code: 'sandbox_failed' });
      // The file itself is fine: read again, it arrives whole.
      expect((await sandbox.getBytes!('/tmp/cut.bin', 32 * MiB)).length).toBe(3 * MiB);
      // Input Modal refuses fails the write at once, saying so, rather than leaving `cat` waiting for it.
      fake.failStdin('/tmp/refused.bin', grpcStatus.FAILED_PRECONDITION, 'stdin is closed');
      const started = Date.now();
      await expect(sandbox.putBytes!('/tmp/refused.bin', randomBytes(MiB))).rejects.toMatchObject({
        code: 'sandbox_failed',
        message: expect.stringMatching(/sending input to a command in the Modal sandbox failed: .*stdin is closed/),
      });
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      await sandbox.release();
    }
    expect(fake.refusals).toEqual([]);
  });

  it('takes a checkpoint bundle again when its transfer broke, instead of recording the work as lost', {
    timeout: 60_000,
  }, async () => {
    const sandbox = await acquire();
    try {
      await sandbox.writeFile('CUT.md', `${randomBytes(6000).toString('base64')}\n`);
      const baseCommit = (await sandbox.exec('git rev-parse main')).stdout.trim();
      const store = createCheckpointStore(app.database.db);
      // The checkpoint's bundle read (only it names the bundle by its absolute path) ends early once.
      fake.faultStdio('/workspace/.git/patchbay-checkpoint.bundle', { afterBytes: 1000, kind: 'end' });
      const stored = await checkpointWork({
        sessionId,
        sandbox,
        scratchDir: join(app.dataDir, 'tmp'),
        store,
        base: { branch: 'unused', baseBranch: 'main', baseCommit },
        step: 1_000_000,
        maxBytes: 64 * MiB,
        signal: AbortSignal.timeout(50_000),
      });
      const latest = await store.latest(sessionId);
      expect(latest).toMatchObject({ step: 1_000_000, tree: stored.tree });
      expect(latest?.unavailable).toBeUndefined();
      expect(latest?.bundle?.length).toBeGreaterThan(1000);
    } finally {
      await sandbox.release();
    }
    expect(fake.refusals).toEqual([]);
  });

  it("runs a command over Modal's 64 KiB limit by passing it as a file, with its stdin and working directory", {
    timeout: 60_000,
  }, async () => {
    const sandbox = await acquire();
    try {
      await sandbox.exec('mkdir -p sub');
      const command = `cat > big.txt <<'EOF'\n${'y'.repeat(100_000)}\nEOF\nwc -c < big.txt; pwd; cat`;
      const result = await sandbox.exec(command, { cwd: 'sub', stdin: 'piped' });
      expect(result).toMatchObject({ exitCode: 0, stdout: '100001\n/workspace/sub\npiped' });
      // Nothing of the command is left behind in the sandbox.
      expect((await sandbox.exec('ls -A /tmp | grep -c patchbay-cmd || true')).stdout.trim()).toBe('0');
    } finally {
      await sandbox.release();
    }
    expect(fake.refusals).toEqual([]);
  });

  it('keeps a sandbox whose snapshot failed unreleased, and retries the snapshot', { timeout: 60_000 }, async () => {
    const before = (await record()).image_id;
    let sandbox = await acquire();
    await sandbox.writeFile('AFTER.md', 'after\n');
    fake.failSnapshots(1, grpcStatus.FAILED_PRECONDITION, 'snapshot could not be taken');
    await sandbox.release();
    const retried = await record();
    expect(retried).toMatchObject({ released: true, sandbox_id: expect.any(String) });
    expect(retried.image_id).not.toBe(before);
    const image = fake.images.get(retried.image_id!);
    expect(image?.kind === 'snapshot' && existsSync(join(image.fsDir, 'workspace', 'AFTER.md'))).toBe(true);

    sandbox = await acquire();
    await sandbox.writeFile('LATER.md', 'later\n');
    fake.failSnapshots(100, grpcStatus.FAILED_PRECONDITION, 'snapshot could not be taken');
    await sandbox.release();
    fake.failSnapshots(0, grpcStatus.OK, '');
    const failed = await record();
    expect(failed).toMatchObject({ released: false, image_id: retried.image_id, sandbox_id: retried.sandbox_id });
    // The sandbox still holds the work, and the next run reattaches to it.
    expect(fake.sandboxes.get(failed.sandbox_id!)!.result).toBeUndefined();
    sandbox = await acquire();
    try {
      expect(await sandbox.readFile('LATER.md')).toBe('later\n');
    } finally {
      await sandbox.release();
    }
    expect(await record()).toMatchObject({ released: true, sandbox_id: retried.sandbox_id });
    expect(fake.refusals).toEqual([]);
  });

  it('reattaches only to a sandbox with time left for a whole run, else continues in a new one from its snapshot', {
    timeout: 60_000,
  }, async () => {
    const old = await record();
    // As if the sandbox had been in use for 80 of its 120 minutes: 40 left, less than a 60-minute run.
    await app.database.db
      .updateTable('modal_sandboxes')
      .set({ expires_at: new Date(Date.now() + 40 * 60_000) })
      .where('session_id', '=', sessionId)
      .execute();
    const sandbox = await acquire();
    try {
      const now = await record();
      expect(now.sandbox_id).not.toBe(old.sandbox_id);
      expect(fake.sandboxes.get(old.sandbox_id!)!.result).toBeDefined();
      expect(fake.images.get(fake.sandboxes.get(now.sandbox_id!)!.imageId)).toMatchObject({
        kind: 'snapshot',
        fromSandbox: old.sandbox_id,
      });
      expect(await sandbox.readFile('CHANGELOG.md')).toBe('# Changes\n\n- first\n');
      expect(sandbox.restoredNote).toBeUndefined();
    } finally {
      await sandbox.release();
    }
    expect(fake.refusals).toEqual([]);
  });

  it('refuses what Modal refuses: large messages, large commands, bad allowlists; and ends idle sandboxes and expired snapshots', {
    timeout: 60_000,
  }, async () => {
    const { ModalClient } = await import('modal');
    const client = new ModalClient({
      tokenId: fake.tokenId,
      tokenSecret: fake.tokenSecret,
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    const modalApp = await client.apps.fromName('patchbay-limits', { createIfMissing: true });
    const image = client.images.fromRegistry('debian:bookworm-slim');
    const sb = await client.sandboxes.create(modalApp, image, { timeoutMs: 600_000, idleTimeoutMs: 60_000 });
    const refusalsBefore = fake.refusals.length;

    // The SDK counts UTF-16 units and refuses 70,000 of them itself; 40,000 two-byte letters pass it and reach Modal.
    await expect(sb.exec(['echo', 'x'.repeat(70_000)])).rejects.toThrow(/must be less than 65536 bytes/);
    await expect(sb.exec(['echo', 'é'.repeat(40_000)])).rejects.toThrow(
      /must be less than 65536 bytes \(ARG_MAX\). Got 80004 bytes/,
    );
    const proc = await sb.exec(['cat'], { mode: 'binary' });
    const writer = proc.stdin.getWriter();
    await expect(writer.write(new Uint8Array(5 * MiB))).rejects.toThrow(/larger than max/);
    await proc.closeStdin();
    await proc.wait();
    await expect(
      client.sandboxes.create(modalApp, image, { outboundDomainAllowlist: ['https://registry.npmjs.org/'] }),
    ).rejects.toThrow(/is not a host name/);
    expect(fake.refusals.slice(refusalsBefore)).toEqual([
      expect.stringMatching(/^TaskExecStart: Total length of CMD arguments must be less than 65536 bytes/),
      expect.stringMatching(/^TaskExecStdinWrite: Received message larger than max \(\d+ vs\. 4194304\)/),
      expect.stringMatching(/^SandboxCreateV2: allowed domain "https:\/\/registry.npmjs.org\/" is not a host name/),
    ]);
    fake.refusals.splice(refusalsBefore);

    const snapshot = await sb.snapshotFilesystem({ ttlMs: 86_400_000 });
    expect(await sb.poll()).toBeNull();
    fake.advance(61_000);
    await waitFor(async () => (await sb.poll()) !== null, 'the idle sandbox to end');
    expect(fake.sandboxes.get(sb.sandboxId)!.result).toMatchObject({ status: 7 });
    expect((await client.images.fromId(snapshot.imageId)).imageId).toBe(snapshot.imageId);
    fake.advance(86_400_000);
    await expect(client.images.fromId(snapshot.imageId)).rejects.toThrow(/not found/i);
    expect(fake.refusals).toEqual([]);
  });

  // Last: it moves the fake's clock past every snapshot's TTL.
  it('continues a session whose snapshot expired from its database checkpoint, a chain of increments', {
    timeout: 120_000,
  }, async () => {
    // Three steps that change files, so the checkpoint is a bundle and two increments, then a question.
    const model = createScriptedProvider({
      scenario: (messages) => {
        const turn = messages.filter((m) => m.role === 'assistant').length;
        if (turn === 0) return { toolCalls: [{ name: 'write_file', input: { path: 'NOTES.md', content: 'draft\n' } }] };
        if (turn === 1)
          return {
            toolCalls: [
              { name: 'run_shell', input: { command: 'mkdir -p deep && printf x > deep/x.txt && rm README.md' } },
            ],
          };
        if (turn === 2)
          return {
            toolCalls: [
              { name: 'write_file', input: { path: 'MORE.md', content: 'more\n' } },
              { name: 'ask_user', input: { question: 'Which title?', choices: ['Notes', 'Draft'] } },
            ],
          };
        if (turn === 3) return { toolCalls: [{ name: 'run_shell', input: { command: 'cat NOTES.md' } }] };
        return { text: 'Kept the draft as Notes.' };
      },
    });
    const second = await modal.startPatchbay({ model });
    try {
      const id = await startWebSession(second, { text: 'Write some notes', repo: remote.remote });
      const waiting = await waitForStatus(second, id, ['waiting', 'failed', 'completed'], 60_000);
      expect(waiting.status).toBe('waiting');
      const first = await releasedModalSandbox(second, id);
      const increments = await second.database.db
        .selectFrom('session_checkpoint_increments')
        .select(['step', 'run_epoch'])
        .where('session_id', '=', id)
        .execute();
      expect(increments.length).toBeGreaterThanOrEqual(2);
      // Stored with their steps, under the run's lease.
      const { run_epoch: epoch } = await second.database.db
        .selectFrom('sessions')
        .select('run_epoch')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      expect(increments.map((part) => part.run_epoch)).toEqual(increments.map(() => epoch));
      // The container is lost with no exit snapshot, and 31 days pass: Modal has deleted the release snapshot.
      fake.kill(first.sandbox_id!, {}, { exitSnapshot: false });
      fake.advance(31 * 86_400_000);

      await second.service.sendMessage(id, changelogRequester, 'Notes', waiting.pendingQuestion!.questionId);
      const done = await waitForStatus(second, id, ['completed', 'failed'], 60_000);
      expect(done.status, done.error ?? '').toBe('completed');
      expect(await git(remote.remote, 'show', `${done.result!.commit}:NOTES.md`)).toBe('draft');
      expect(await git(remote.remote, 'show', `${done.result!.commit}:MORE.md`)).toBe('more');
      expect(await git(remote.remote, 'show', `${done.result!.commit}:deep/x.txt`)).toBe('x');
      await expect(git(remote.remote, 'show', `${done.result!.commit}:README.md`)).rejects.toThrow();
      const shell = model.requests.at(-1)!.messages.findLast((m) => m.role === 'tool' && m.name === 'run_shell');
      expect(shell?.role === 'tool' && shell.content).toContain('draft');
    } finally {
      await second.dispose();
    }
    expect(fake.refusals).toEqual([]);
  });
});
