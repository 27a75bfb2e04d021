import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { join } from 'node:path';
import { PatchbayError } from '../core/errors.ts';

/** Where the sandbox writes the bundle, relative to the workspace root. */
export const workspaceBundlePath = '.git/patchbay-push.bundle';

/**
 * Copies the bundle the sandbox wrote into a host-private file, refusing anything that is not a
 * regular file inside `<workspaceDir>/.git`: the sandbox could have put a symlink to a host file, a
 * FIFO, or swapped `.git` itself. The copy is what git reads, so later swaps in the workspace do
 * not matter. Returns the copy's path; the caller removes it. `name` is the file in `.git`
 * (default: the push bundle).
 */
export async function takeBundle(options: {
  workspaceDir: string;
  scratchDir: string;
  maxBytes: number;
  name?: string;
}): Promise<string> {
  const name = options.name ?? 'patchbay-push.bundle';
  const refuse: (reason: string) => never = (reason) => {
    throw new PatchbayError('git_failed', `Refusing the bundle .git/${name}: ${reason}`);
  };
  const gitDir = join(options.workspaceDir, '.git');
  const gitStat = await lstat(gitDir).catch(() => undefined);
  if (!gitStat?.isDirectory()) refuse('the workspace .git is not a directory');
  const expected = join(await realpath(gitDir), name);

  let handle: FileHandle;
  try {
    handle = await open(expected, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    refuse(code === 'ELOOP' ? 'it is a symlink' : `it cannot be opened (${code ?? 'unknown error'})`);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) refuse('it is not a regular file');
    if (stats.size > options.maxBytes) refuse(`it is larger than ${options.maxBytes} bytes`);
    // A parent directory may have been swapped for a symlink between realpath and open.
    const opened = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => expected);
    if (opened !== expected) refuse('it is not inside the workspace .git directory');

    await mkdir(options.scratchDir, { recursive: true, mode: 0o700 });
    const copyPath = join(options.scratchDir, `push-${randomBytes(8).toString('hex')}.bundle`);
    const copy = await open(copyPath, 'wx', 0o600);
    try {
      const buffer = Buffer.alloc(1024 * 1024);
      let total = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        total += bytesRead;
        if (total > options.maxBytes) refuse(`it is larger than ${options.maxBytes} bytes`);
        await copy.write(buffer, 0, bytesRead);
      }
    } catch (error) {
      await copy.close();
      await rm(copyPath, { force: true });
      throw error;
    }
    await copy.close();
    return copyPath;
  } finally {
    await handle.close();
  }
}

/**
 * The same, for a sandbox the host cannot see into: the sandbox hands the bundle over as bytes
 * (never a path the host opens), capped at `maxBytes`, and the host writes its own private copy.
 */
export async function takeBundleFromSandbox(options: {
  sandbox: Sandbox;
  scratchDir: string;
  maxBytes: number;
  /** Path relative to the workspace root (default: the push bundle). */
  path?: string;
}): Promise<string> {
  if (!options.sandbox.getBytes) refuse('this sandbox cannot hand files over');
  let bytes: Uint8Array;
  try {
    bytes = await options.sandbox.getBytes(
      `${options.sandbox.workdir}/${options.path ?? workspaceBundlePath}`,
      options.maxBytes,
    );
  } catch (error) {
    refuse((error as Error).message);
  }
  await mkdir(options.scratchDir, { recursive: true, mode: 0o700 });
  const copyPath = join(options.scratchDir, `push-${randomBytes(8).toString('hex')}.bundle`);
  await writeFile(copyPath, bytes, { mode: 0o600, flag: 'wx' });
  return copyPath;
}

function refuse(reason: string): never {
  throw new PatchbayError('git_failed', `Refusing the push bundle ${workspaceBundlePath}: ${reason}`);
}
