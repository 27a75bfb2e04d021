import { chmod, chown, lstat, mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';
import { runProcess } from './run-process.ts';
import { isAlive, makePrivateDir, type SandboxUser } from './sandbox-user.ts';
import { isMountPoint } from './workspace-image.ts';

/**
 * Where the egress proxies' unix sockets live: one short private directory per provider (a unix
 * socket path must stay under 108 bytes), made on first use. As root it is a small tmpfs of its
 * own, because a bind's root in the mount table is its source's path on its file system: the
 * sandbox's bind of a socket then shows `/N.sock`, not the temp directory's path.
 */
export type EgressSockets = {
  /** A fresh socket path for one sandbox handle's proxy (nothing listens on it yet). */
  next(): Promise<string>;
  /** Lets the sandbox user connect to a listening socket (write permission): its group, nobody else. */
  grant(socket: string): Promise<void>;
  /** Removes the directory, and its tmpfs as root (after every proxy closed). */
  close(): Promise<void>;
};

/** Size of the sockets' tmpfs: sockets hold no data, only inodes. */
const TMPFS_OPTIONS = 'size=64k,nr_inodes=4096,nosuid,nodev,noexec';
const TOOL_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };

/** The egress sockets of one provider, under `tmp`; `runAs` is the sandbox user when the server is root. */
export function createEgressSockets(tmp: string, runAs: SandboxUser | undefined): EgressSockets {
  let dir: Promise<string> | undefined;
  let count = 0;
  return {
    async next() {
      dir ??= makeSocketDir(tmp, runAs);
      return path.join(await dir, `${++count}.sock`);
    },
    async grant(socket) {
      if (!runAs) return;
      await chown(socket, 0, runAs.gid);
      await chmod(socket, 0o660);
    },
    async close() {
      const made = await dir?.catch(() => undefined);
      if (made) await removeSocketDir(made);
    },
  };
}

/** Named after this process, so directories of servers that are gone (killed before close) are removed here. */
async function makeSocketDir(tmp: string, runAs: SandboxUser | undefined): Promise<string> {
  await removeStaleSocketDirs(tmp);
  const dir = await mkdtemp(path.join(tmp, `patchbay-egress-${process.pid}-`));
  if (runAs) await mountTmpfs(dir);
  await makePrivateDir(dir, runAs);
  return dir;
}

async function mountTmpfs(dir: string): Promise<void> {
  const result = await runProcess({
    file: 'mount',
    args: ['-t', 'tmpfs', '-o', TMPFS_OPTIONS, '--', 'tmpfs', dir],
    env: TOOL_ENV,
    timeoutMs: 60_000,
    maxOutputBytes: 4096,
  });
  if (result.exitCode !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new PatchbayError(
      'sandbox_failed',
      `could not mount the egress sockets' tmpfs: ${result.stderr.trim() || `mount exit ${result.exitCode}`}`,
    );
  }
}

/** Unmounts the directory's tmpfs, if it has one (lazily: a socket still open keeps it until closed), then removes it. */
async function removeSocketDir(dir: string): Promise<void> {
  if (await isMountPoint(dir)) {
    await runProcess({
      file: 'umount',
      args: ['--lazy', '--', dir],
      env: TOOL_ENV,
      timeoutMs: 60_000,
      maxOutputBytes: 4096,
    });
  }
  await rm(dir, { recursive: true, force: true });
}

/** Only directories owned by this uid, of processes that are gone. */
async function removeStaleSocketDirs(tmp: string): Promise<void> {
  for (const name of await readdir(tmp).catch(() => [] as string[])) {
    const pid = /^patchbay-egress-(\d+)-/.exec(name)?.[1];
    if (!pid || isAlive(Number(pid))) continue;
    const dir = path.join(tmp, name);
    const stats = await lstat(dir).catch(() => undefined);
    if (!stats?.isDirectory() || stats.uid !== process.getuid?.()) continue;
    await removeSocketDir(dir).catch(() => {});
  }
}
