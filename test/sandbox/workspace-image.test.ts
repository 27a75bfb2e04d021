import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocalSandboxProvider, type LocalSandboxProvider } from '../../sandbox/index.ts';
import { DEFAULT_SANDBOX_LIMITS } from '../../sandbox/sandbox-limits.ts';
import { eventually, makeTempDir, removeDataDir } from './sandbox-test-helpers.ts';

const limits = { ...DEFAULT_SANDBOX_LIMITS, diskMb: 32 };
const log = pino({ level: 'silent' });
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Mount points under `dir` in this process's mount table, and the loop devices backing files under it. */
async function mountsUnder(dir: string): Promise<string[]> {
  const lines = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n');
  return lines.map((line) => line.split(' ')[4] ?? '').filter((point) => point.startsWith(`${dir}/`));
}
const loopsUnder = (dir: string): string[] =>
  execFileSync('losetup', ['--list', '--noheadings', '--output', 'BACK-FILE'], { encoding: 'utf8' })
    .split('\n')
    .filter((file) => file.includes(dir));

async function provider(dataDir: string, ttlMinutes = 60, clock?: () => Date): Promise<LocalSandboxProvider> {
  return createLocalSandboxProvider({
    dataDir,
    log,
    ttlMinutes,
    mode: 'bwrap',
    bwrapPath: '/usr/bin/bwrap',
    limits,
    diskQuota: 'filesystem',
    ...(clock && { clock }),
  });
}

/**
 * Workspaces as file systems of their own (a root server): many at once, one left mounted by a
 * server that died, removal, shutdown, and a workspace made before images existed.
 */
describe('workspace file systems', () => {
  it('gives many workspaces at once a file system each, and unmounts them all at shutdown', {
    timeout: 120_000,
  }, async () => {
    const dataDir = await makeTempDir('images-many');
    cleanups.push(() => removeDataDir(dataDir));
    const local = await provider(dataDir);
    const ids = Array.from({ length: 24 }, (_, i) => `many-${i}`);
    const sandboxes = await Promise.all(ids.map((id) => local.acquire(id, { network: 'none' })));
    const results = await Promise.all(
      sandboxes.map((sandbox, i) => sandbox.exec(`echo ${i} > mine.txt && df -B1M --output=size . | tail -1`)),
    );
    expect(results.map((result) => result.exitCode)).toEqual(ids.map(() => 0));
    // Each a file system of the quota's size (less ext4's own metadata), not the host's disk.
    expect(results.every((result) => Number(result.stdout.trim()) <= limits.diskMb)).toBe(true);
    expect((await mountsUnder(dataDir)).sort()).toEqual(ids.map((id) => local.hostPath(id)).sort());
    for (const sandbox of sandboxes) await sandbox.release();
    // Released is not removed: the host still sees each workspace (its git work between runs).
    expect(await readFile(path.join(local.hostPath('many-7'), 'mine.txt'), 'utf8')).toBe('7\n');
    await local.close();
    expect(await mountsUnder(dataDir)).toEqual([]);
    // The loop device goes when the kernel lets go of the unmounted file system (autoclear), a moment later.
    expect(await eventually(async () => loopsUnder(dataDir).length === 0, 10_000)).toBe(true);
    // After a restart each comes back with what it held.
    const again = await provider(dataDir);
    const resumed = await again.acquire('many-7', { network: 'none' });
    expect((await resumed.exec('cat mine.txt')).stdout).toBe('7\n');
    await resumed.destroy();
    expect(await mountsUnder(dataDir)).toEqual([]);
    expect(await readdir(path.join(dataDir, 'workspace-images'))).not.toContain('many-7.ext4');
    await again.close();
  });

  it('uses a workspace a crashed server left mounted, once, and unmounts and removes it when reaped', {
    timeout: 60_000,
  }, async () => {
    const dataDir = await makeTempDir('images-crash');
    cleanups.push(() => removeDataDir(dataDir));
    const crashed = await provider(dataDir);
    const held = await crashed.acquire('left-mounted', { network: 'none' });
    await held.exec('echo before the crash > notes.txt');
    // The server dies here: no release, no close. The next one starts on the same DATA_DIR.
    let now = new Date();
    const next = await provider(dataDir, 60, () => now);
    const resumed = await next.acquire('left-mounted', { network: 'none' });
    expect((await resumed.exec('cat notes.txt')).stdout).toBe('before the crash\n');
    expect(await mountsUnder(dataDir)).toEqual([next.hostPath('left-mounted')]);
    await resumed.release();
    now = new Date(now.getTime() + 61 * 60_000);
    expect(await next.reap()).toEqual(['left-mounted']);
    expect(await mountsUnder(dataDir)).toEqual([]);
    expect(await eventually(async () => loopsUnder(dataDir).length === 0, 10_000)).toBe(true);
    expect(await readdir(path.join(dataDir, 'workspace-images'))).toEqual([]);
    await next.close();
  });

  it('empties a file system a killed server made but did not clear, mounted or not, so the clone finds it empty', {
    timeout: 60_000,
  }, async () => {
    const dataDir = await makeTempDir('images-cut-short');
    cleanups.push(() => removeDataDir(dataDir));
    const killed = await provider(dataDir);
    for (const id of ['left-mounted', 'left-unmounted']) {
      await killed.acquire(id, { network: 'none' });
      // As mkfs leaves it: the server was killed between making the file system and removing this.
      await mkdir(path.join(killed.hostPath(id), 'lost+found'));
    }
    execFileSync('umount', ['--', killed.hostPath('left-unmounted')]);
    const next = await provider(dataDir);
    for (const id of ['left-mounted', 'left-unmounted']) {
      await next.acquire(id, { network: 'none' });
      expect(await readdir(next.hostPath(id)), id).toEqual([]);
    }
    await next.close();
  });

  it('moves a workspace made before workspaces had file systems into its own, and refuses one over the quota untouched', {
    timeout: 60_000,
  }, async () => {
    const dataDir = await makeTempDir('images-upgrade');
    cleanups.push(() => removeDataDir(dataDir));
    const old = path.join(dataDir, 'workspaces', 'from-before');
    await mkdir(path.join(old, 'src'), { recursive: true });
    await writeFile(path.join(old, 'src', 'a.ts'), 'export const a = 1;\n');
    const big = path.join(dataDir, 'workspaces', 'too-big');
    await mkdir(big, { recursive: true });
    await writeFile(path.join(big, 'big.bin'), Buffer.alloc(40 * 1024 * 1024, 1));
    const local = await provider(dataDir);
    const sandbox = await local.acquire('from-before', { network: 'none' });
    expect((await sandbox.exec('cat src/a.ts')).stdout).toBe('export const a = 1;\n');
    expect(await mountsUnder(dataDir)).toEqual([old]);
    await sandbox.release();
    await expect(local.acquire('too-big', { network: 'none' })).rejects.toThrow(
      /SANDBOX_DISK_MB may be below what it holds/,
    );
    expect((await stat(path.join(big, 'big.bin'))).size).toBe(40 * 1024 * 1024);
    expect(await mountsUnder(dataDir)).toEqual([old]);
    await local.close();
  });
});
