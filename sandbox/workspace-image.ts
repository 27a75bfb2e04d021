import {
  access,
  mkdir,
  mkdtemp,
  readdir,
  rename,
  rm,
  rmdir,
  stat,
  statfs,
  truncate,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';
import { runProcess } from './run-process.ts';

/**
 * A workspace of its own file system: a sparse ext4 image of SANDBOX_DISK_MB under
 * `DATA_DIR/workspace-images`, loop-mounted at the workspace's path while a sandbox holds it. The
 * kernel then refuses the byte past the quota, however many files a command writes how fast, and
 * the mount's root is the image's `/`, so the sandbox's mount table names no host path (a bind of a
 * directory shows that directory's path on its file system). Needs root and /dev/loop-control.
 *
 * The image is written only by the kernel's ext4 driver on behalf of sandboxed processes, never
 * raw by them: the image file is outside every sandbox. nosuid and nodev hold on the host mount.
 */
export const IMAGE_MOUNT_OPTIONS = 'loop,nosuid,nodev,noatime,noinit_itable,discard';

const MB = 1024 * 1024;
const TOOL_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };

/**
 * Below this much free space a workspace file system is full: a command still growing it is
 * stopped. ext4 keeps a little back (metadata, directory blocks), so writes fail a bit before 0.
 */
export const FULL_BELOW_BYTES = 1024 * 1024;

/** What strerror(ENOSPC) reads in every libc, as tools print it. */
const NO_SPACE = /No space left on device/;

/**
 * Whether a command that ended met the workspace's file system full: it grew the file system to
 * FULL_BELOW_BYTES, or it failed saying the disk was full while the workspace has less than a
 * thirty-second of its size left (a write of a few MB fails with a MB or two still free; a full
 * private /tmp says the same words with the workspace far from full).
 */
export function metFullImage(
  usage: ImageUsage,
  startBytes: number,
  exit: { exitCode: number | null; stderr: string },
): boolean {
  if (usage.freeBytes < FULL_BELOW_BYTES && usage.usedBytes > startBytes) return true;
  return (
    exit.exitCode !== 0 &&
    NO_SPACE.test(exit.stderr) &&
    usage.freeBytes < Math.max(FULL_BELOW_BYTES, usage.sizeBytes / 32)
  );
}

export type ImageUsage = { usedBytes: number; freeBytes: number; sizeBytes: number };

/**
 * Makes the image when missing (sparse: the host disk holds only what is written), and mounts it
 * at `mountPoint` unless it is mounted there already (a server that crashed while a sandbox held
 * it). A workspace not checked out yet (no `.git`) loses the empty `lost+found` its file system
 * came with, so the clone finds it empty: also when a server was killed between making the file
 * system and removing it (its `mount` may have run to the end without it).
 */
export async function attachWorkspaceImage(image: string, mountPoint: string, sizeMb: number): Promise<void> {
  await mkdir(mountPoint, { recursive: true, mode: 0o700 });
  if (!(await isMountPoint(mountPoint))) {
    if (!(await exists(image))) {
      await makeImage(image, sizeMb);
      if ((await readdir(mountPoint)).length > 0) await moveIntoImage(image, mountPoint);
    }
    await tool(
      'mount',
      ['-t', 'ext4', '-o', IMAGE_MOUNT_OPTIONS, '--', image, mountPoint],
      `mount the workspace image ${path.basename(image)}`,
    );
  }
  if (!(await exists(path.join(mountPoint, '.git')))) await rmdir(path.join(mountPoint, 'lost+found')).catch(() => {});
}

/**
 * Unmounts the workspace. A process still holding a file there (a server's own reader, a command
 * being reaped) gets a lazy unmount: the file system goes once it is let go, and the loop device
 * with it (mount's autoclear). Never throws for a workspace that is not mounted.
 */
export async function detachWorkspaceImage(mountPoint: string): Promise<void> {
  if (!(await isMountPoint(mountPoint))) return;
  const plain = await runProcess({
    file: 'umount',
    args: ['--', mountPoint],
    env: TOOL_ENV,
    timeoutMs: 60_000,
    maxOutputBytes: 4096,
  });
  if (plain.exitCode === 0) return;
  await tool('umount', ['--lazy', '--', mountPoint], 'unmount the workspace');
}

/** Removes the image (after detachWorkspaceImage); its space is the host's again. */
export async function removeWorkspaceImage(image: string): Promise<void> {
  await rm(image, { force: true });
}

/** Bytes used and free on the workspace's own file system (statfs: one system call, no walk). */
export async function imageUsage(mountPoint: string): Promise<ImageUsage> {
  const fs = await statfs(mountPoint);
  return {
    usedBytes: (fs.blocks - fs.bfree) * fs.bsize,
    freeBytes: fs.bavail * fs.bsize,
    sizeBytes: fs.blocks * fs.bsize,
  };
}

/**
 * Whether this host can give workspaces file systems of their own: root, loop devices, mkfs.ext4
 * and an ext4 driver, tried once with a small image in `scratchDir`. The reason when not.
 */
export async function probeWorkspaceImages(
  scratchDir: string,
  serverUid: number | undefined,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  if (serverUid !== 0) return { ok: false, reason: 'the server is not root (loop mounts need it)' };
  if (!(await exists('/dev/loop-control'))) return { ok: false, reason: 'no /dev/loop-control' };
  const dir = await mkdtemp(path.join(scratchDir, 'patchbay-image-probe-'));
  const mountPoint = path.join(dir, 'mnt');
  try {
    await attachWorkspaceImage(path.join(dir, 'probe.img'), mountPoint, 8);
    await detachWorkspaceImage(mountPoint);
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  } finally {
    await detachWorkspaceImage(mountPoint).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Whether `dir` is a mount point: on another device than its parent (the workspaces folder). The
 * sandbox cannot mount anything on the host, so a mount here is one Patchbay made.
 */
export async function isMountPoint(dir: string): Promise<boolean> {
  const [self, parent] = await Promise.all([
    stat(dir).catch(() => undefined),
    stat(path.dirname(dir)).catch(() => undefined),
  ]);
  return self !== undefined && parent !== undefined && self.dev !== parent.dev;
}

/**
 * A sparse file of `sizeMb` with an ext4 file system: no blocks reserved for root (the host writes
 * the clone as root, within the quota like everything else), nothing zeroed ahead (a sparse file
 * reads as zeros already), so making one takes a fraction of a second and a few MB of host disk.
 */
async function makeImage(image: string, sizeMb: number): Promise<void> {
  await mkdir(path.dirname(image), { recursive: true, mode: 0o700 });
  const partial = `${image}.partial`;
  try {
    await rm(partial, { force: true });
    await writeFile(partial, '', { mode: 0o600 });
    await truncate(partial, sizeMb * MB);
    await tool(
      'mkfs.ext4',
      ['-q', '-F', '-m', '0', '-E', 'nodiscard,lazy_itable_init=1,lazy_journal_init=1', '--', partial],
      'make the workspace image',
    );
    await rename(partial, image);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

/**
 * A workspace made before workspaces had file systems of their own (an upgrade): its files are
 * copied into the new image, and only then removed from the folder the image is mounted over. One
 * that does not fit the quota stays as it was, and the error says so.
 */
async function moveIntoImage(image: string, dir: string): Promise<void> {
  const staging = `${image}.mnt`;
  await mkdir(staging, { recursive: true, mode: 0o700 });
  try {
    await tool(
      'mount',
      ['-t', 'ext4', '-o', IMAGE_MOUNT_OPTIONS, '--', image, staging],
      'mount the new workspace image',
    );
    try {
      await rmdir(path.join(staging, 'lost+found')).catch(() => {});
      await tool(
        'cp',
        ['-a', '--', `${dir}/.`, `${staging}/`],
        `copy the workspace into its own file system (SANDBOX_DISK_MB may be below what it holds)`,
      );
    } finally {
      await detachWorkspaceImage(staging);
    }
  } catch (error) {
    await removeWorkspaceImage(image);
    throw error;
  } finally {
    await rmdir(staging).catch(() => {});
  }
  for (const entry of await readdir(dir)) await rm(path.join(dir, entry), { recursive: true, force: true });
}

async function tool(file: string, args: string[], what: string): Promise<void> {
  const result = await runProcess({ file, args, env: TOOL_ENV, timeoutMs: 60_000, maxOutputBytes: 4096 });
  if (result.exitCode !== 0) {
    throw new PatchbayError(
      'sandbox_failed',
      `could not ${what}: ${result.stderr.trim() || `${file} exit ${result.exitCode}`}`,
    );
  }
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}
