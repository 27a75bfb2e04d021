import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import {
  createLocalSandboxProvider,
  type LocalSandboxProvider,
  type LocalSandboxProviderOptions,
} from '../../sandbox/index.ts';

export type CapturedLog = { log: Logger; lines: () => Array<{ level: number; msg: string }> };

/** A real pino logger writing JSON lines into memory, so tests can assert what was logged. */
export function captureLog(): CapturedLog {
  const raw: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void raw.push(line) });
  return { log, lines: () => raw.map((line) => JSON.parse(line) as { level: number; msg: string }) };
}

export async function makeTempDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), `patchbay-${prefix}-`));
}

/** A provider on a fresh temp data dir; `cleanup` removes the dir. */
export async function makeProvider(
  overrides: Partial<LocalSandboxProviderOptions> = {},
): Promise<{ provider: LocalSandboxProvider; dataDir: string; cleanup: () => Promise<void> }> {
  const dataDir = await makeTempDir('sandbox-data');
  const provider = await createLocalSandboxProvider({
    dataDir,
    log: pino({ level: 'silent' }),
    ttlMinutes: 60,
    mode: 'bwrap',
    bwrapPath: '/usr/bin/bwrap',
    ...overrides,
  });
  return { provider, dataDir, cleanup: () => removeDataDir(dataDir) };
}

/**
 * Removes a test's data dir, first unmounting any workspace file system a test left mounted (it
 * neither released nor destroyed its sandbox), so the loop device is freed and rm does not meet a
 * busy mount point.
 */
export async function removeDataDir(dataDir: string): Promise<void> {
  const mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
  const points = mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point === dataDir || point.startsWith(`${dataDir}/`));
  for (const point of points.reverse()) execFileSync('umount', ['--lazy', '--', point]);
  await rm(dataDir, { recursive: true, force: true });
}

/**
 * A session's workspace gone as if its host were lost: unmounted, and its file system image (a
 * root server's, see sandbox/workspace-image.ts) and folder removed.
 */
export async function loseWorkspace(dataDir: string, sessionId: string): Promise<void> {
  await removeDataDir(path.join(dataDir, 'workspaces', sessionId));
  await rm(path.join(dataDir, 'workspace-images', `${sessionId}.ext4`), { force: true });
}

/** Host pids whose command line contains `marker` (to prove a process tree is really gone). */
export async function pidsWithMarker(marker: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').join(' ').includes(marker)) pids.push(Number(name));
  }
  return pids;
}

/** Waits until `check` holds or `ms` passes; returns the last value of `check`. */
export async function eventually(check: () => Promise<boolean>, ms = 3_000): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A distinctive `sleep` duration, so its processes can be found in /proc. */
export function uniqueSleepSeconds(): string {
  return `${900 + Math.floor(Math.random() * 99)}.${Math.floor(Math.random() * 1e6)}`;
}
