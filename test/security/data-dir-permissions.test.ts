import { spawnSync } from 'node:child_process';
import { chmod, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createLocalSandboxProvider } from '../../sandbox/index.ts';
import { ensureMirror, mirrorPath, resolveRepo } from '../../src/git/mirror.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { makeTempDir } from '../sandbox/sandbox-test-helpers.ts';

const asRoot = process.getuid?.() === 0;
/** Another local user of the host: neither the server nor the sandbox. */
const OTHER_UID = 4242;

/**
 * The review found workspaces and mirrors readable by other local users. DATA_DIR here is made the
 * way `mkdir` with the usual umask makes it (0755, under a searchable parent), then a provider
 * starts on it, a session writes a file and a mirror is made, and another local user tries to list
 * and read them (as root the probe really runs as that user; otherwise the modes are checked).
 */
describe('security probes: other local users read no workspace, mirror or run state', () => {
  let base: string | undefined;
  let remote: RemoteFixture | undefined;
  afterAll(async () => {
    if (base) await rm(base, { recursive: true, force: true });
    await remote?.cleanup();
  });

  it('closes a world-readable DATA_DIR and every folder a session fills', async () => {
    base = await makeTempDir('data-perms');
    await chmod(base, 0o755);
    const dataDir = path.join(base, 'data');
    await mkdir(dataDir, { mode: 0o755 });
    await chmod(dataDir, 0o755);
    remote = await createRemote();
    await remote.pushCommit('README.md', 'private\n', 'first');

    const log = pino({ level: 'silent' });
    const provider = await createLocalSandboxProvider({
      dataDir,
      log,
      ttlMinutes: 60,
      mode: 'bwrap',
      bwrapPath: '/usr/bin/bwrap',
    });
    const sandbox = await provider.acquire('data-perms', { network: 'none' });
    expect((await sandbox.exec('echo private > secret.txt')).exitCode).toBe(0);
    await ensureMirror(remote.remote, { dataDir, log, signal: AbortSignal.timeout(60_000) });
    const mirror = mirrorPath(dataDir, resolveRepo(remote.remote));
    const workspace = provider.hostPath('data-perms');

    // The folders that hold the others: a mirror or a checkout inside may keep git's own modes.
    const closed = [
      dataDir,
      path.join(dataDir, 'workspaces'),
      workspace,
      path.join(dataDir, 'mirrors'),
      path.join(dataDir, 'workspace-meta'),
    ];
    if (asRoot) {
      // Each probe lists a folder or reads a file as the other user; none may succeed.
      const probes = [
        ...[...closed, mirror].map((dir) => `ls ${dir}`),
        `cat ${path.join(workspace, 'secret.txt')}`,
        `cat ${path.join(mirror, 'HEAD')}`,
      ];
      const got = probes.filter(
        (probe) =>
          spawnSync('/bin/sh', ['-c', `${probe} >/dev/null 2>&1`], { uid: OTHER_UID, gid: OTHER_UID }).status === 0,
      );
      expect(got).toEqual([]);
    }
    for (const dir of closed) {
      const mode = (await stat(dir)).mode & 0o777;
      // DATA_DIR is searchable as root, for the embedded PostgreSQL's own user; never listable.
      expect(mode & 0o077, `${dir} is ${mode.toString(8)}`).toBe(dir === dataDir && asRoot ? 0o011 : 0);
    }
    await sandbox.destroy();
    await provider.close();
  });
});
