import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';
import type { FileEntry } from './sandbox.ts';
import type { SandboxUser } from './sandbox-user.ts';
import { relativeTo, resolveExisting, resolveForWrite, toWorkspaceRelative } from './workspace-path.ts';

/** Largest file readFile returns whole. */
export const MAX_READ_BYTES = 16 * 1024 ** 2;

/** Default and hard ceiling for listFiles, so a node_modules tree cannot flood the caller. */
export const DEFAULT_LIST_LIMIT = 1_000;

/**
 * File operations on a workspace from the host side, confined to it: every path is checked
 * lexically and then by its real path, so `..`, outside absolute paths and symlinks that point
 * away are refused with PatchbayError('path_refused').
 */
export type WorkspaceFiles = {
  readFile(path: string): Promise<string>;
  writeFile(path: string, content: string): Promise<void>;
  listFiles(path: string, options?: { recursive?: boolean; limit?: number }): Promise<FileEntry[]>;
  /** Host directory for a confined working directory (for exec). */
  resolveDir(path: string): Promise<{ hostPath: string; rel: string }>;
};

/** Where a workspace is on the host and inside, and who files written from the host belong to. */
type WorkspaceRoot = { root: string; workdir: string; owner: SandboxUser | undefined };

/** `owner`: who files written from the host belong to (the sandbox user, when the server is root). */
export function createWorkspaceFiles(root: string, workdir: string, owner?: SandboxUser): WorkspaceFiles {
  const at: WorkspaceRoot = { root, workdir, owner };
  return {
    readFile: (input) => readWorkspaceFile(at, input),
    writeFile: (input, content) => writeWorkspaceFile(at, input, content),
    listFiles: (input, options) => listWorkspaceFiles(at, input, options),
    resolveDir: (input) => resolveWorkspaceDir(at, input),
  };
}

/** A regular file's text, at most MAX_READ_BYTES. */
async function readWorkspaceFile({ root, workdir }: WorkspaceRoot, input: string): Promise<string> {
  const real = await resolveExisting(root, toWorkspaceRelative(input, workdir), input);
  // O_NOFOLLOW and checks on the open file: a symlink swapped in after resolving fails instead
  // of escaping, and a huge file the model made cannot exhaust the host's memory. O_NONBLOCK:
  // opening a FIFO returns at once (a blocking open would hold a libuv thread until a writer
  // came), and the type check below refuses it before anything is read.
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (!stats.isFile())
      throw new PatchbayError(
        'invalid_input',
        `${input}: is not a regular file (${fileKind(stats)}); only regular files can be read`,
      );
    if (stats.size > MAX_READ_BYTES) {
      throw new PatchbayError(
        'invalid_input',
        `${input}: is ${(stats.size / 1024 ** 2).toFixed(1)} MiB, over the ${MAX_READ_BYTES / 1024 ** 2} MiB a read returns; read parts of it with a command (head, sed -n, grep)`,
      );
    }
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/** Creates or replaces a regular file (never a FIFO, device or a symlink's target). */
async function writeWorkspaceFile(
  { root, workdir, owner }: WorkspaceRoot,
  input: string,
  content: string,
): Promise<void> {
  const target = await resolveForWrite(root, toWorkspaceRelative(input, workdir), input, owner);
  // O_NOFOLLOW: a symlink swapped in after the checks makes the open fail instead of escaping.
  // O_NONBLOCK and no O_TRUNC: a FIFO or device opens at once (or fails with ENXIO), is refused
  // by type, and is never truncated; a regular file is truncated only after that check.
  let handle: FileHandle;
  try {
    handle = await open(
      target,
      constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      0o644,
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENXIO')
      throw new PatchbayError(
        'invalid_input',
        `${input}: is not a regular file (fifo); only regular files can be written`,
      );
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile())
      throw new PatchbayError(
        'invalid_input',
        `${input}: is not a regular file (${fileKind(stats)}); only regular files can be written`,
      );
    // On the open file, not the path: the sandbox must be able to change what the host wrote.
    if (owner) await handle.chown(owner.uid, owner.gid);
    await handle.truncate(0);
    await handle.writeFile(content, 'utf8');
  } finally {
    await handle.close();
  }
}

/** Entries under `input` (see Sandbox.listFiles): at most `limit`, symlinks listed but never followed. */
async function listWorkspaceFiles(
  { root, workdir }: WorkspaceRoot,
  input: string,
  options: { recursive?: boolean; limit?: number } = {},
): Promise<FileEntry[]> {
  const limit = Math.max(0, Math.min(options.limit ?? DEFAULT_LIST_LIMIT, DEFAULT_LIST_LIMIT * 100));
  const realRoot = await realpath(root);
  const start = await resolveExisting(root, toWorkspaceRelative(input, workdir), input);
  const startStats = await lstat(start);
  if (!startStats.isDirectory()) return [{ path: relativeTo(realRoot, start), type: 'file', size: startStats.size }];

  const entries: FileEntry[] = [];
  // Depth-first in name order, so a limited listing is deterministic; sorted again at the end.
  const walk = async (dir: string): Promise<void> => {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      if (entries.length >= limit) return;
      const full = path.join(dir, name);
      const stats = await lstat(full).catch(() => undefined);
      if (!stats) continue;
      const type = stats.isSymbolicLink() ? 'symlink' : stats.isDirectory() ? 'dir' : 'file';
      entries.push({ path: relativeTo(realRoot, full), type, size: stats.size });
      // Symlinks are listed, never followed; .git is listed but its internals are not.
      if (type === 'dir' && options.recursive && name !== '.git') await walk(full);
    }
  };
  await walk(start);
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The host directory and workspace-relative path of a confined working directory. */
async function resolveWorkspaceDir(
  { root, workdir }: WorkspaceRoot,
  input: string,
): Promise<{ hostPath: string; rel: string }> {
  const rel = toWorkspaceRelative(input, workdir);
  const real = await resolveExisting(root, rel, input);
  if (!(await lstat(real)).isDirectory()) throw new PatchbayError('invalid_input', `${input}: is not a directory`);
  const realRoot = await realpath(root);
  return { hostPath: real, rel: relativeTo(realRoot, real) };
}

function fileKind(stats: Stats): string {
  if (stats.isFIFO()) return 'fifo';
  if (stats.isCharacterDevice()) return 'character device';
  if (stats.isBlockDevice()) return 'block device';
  if (stats.isSocket()) return 'socket';
  if (stats.isDirectory()) return 'directory';
  return 'special file';
}
