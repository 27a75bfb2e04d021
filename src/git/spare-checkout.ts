import { createHash, randomBytes } from 'node:crypto';
import { cp, lstat, mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { runHostGit } from './host-git.ts';
import type { Mirror } from './mirror.ts';

/**
 * A checkout of a mirror's base branch made ahead of time, when a run ends: the next fresh workspace on that repository and base takes it over with a few
 * renames instead of writing every file again (on a repository of 20,000 files the checkout is
 * most of a session's start). One per mirror and base branch, under `DATA_DIR/spares`; never seen by
 * a sandbox before it is taken, so the host may still run git in it.
 */
export function sparePath(dataDir: string, mirror: Mirror, baseBranch: string): string {
  const branchKey = createHash('sha256').update(baseBranch).digest('hex').slice(0, 12);
  return join(dataDir, 'spares', `${basename(mirror.gitDir, '.git')}-${branchKey}`);
}

/**
 * Moves the spare's files into the empty `workspaceDir` when it is a checkout of `commit`; false
 * when there is none (or a stale one, which is removed). Two sessions never get the same spare: it
 * is claimed by renaming it first.
 */
export async function takeSpare(spare: string, workspaceDir: string, commit: string): Promise<boolean> {
  const claimed = `${spare}.taken-${randomBytes(4).toString('hex')}`;
  try {
    await rename(spare, claimed);
  } catch {
    return false;
  }
  try {
    const head = (await readFile(join(claimed, '.git', 'HEAD'), 'utf8')).trim();
    if (head !== commit) return false;
    await mkdir(workspaceDir, { recursive: true });
    for (const entry of await readdir(claimed)) await moveEntry(join(claimed, entry), join(workspaceDir, entry));
    return true;
  } finally {
    await rm(claimed, { recursive: true, force: true });
  }
}

/**
 * A rename, or a copy where the workspace is a file system of its own (a root server's workspace
 * image, see sandbox/workspace-image.ts): symlinks are copied as they are, never followed.
 */
async function moveEntry(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await cp(from, to, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
  }
}

/** The longest a spare takes to make (its git calls' time limit). */
const spareMakingMs = 10 * 60_000;

/**
 * Spares half-made or half-taken by a process that was killed (its `finally` never ran): whole
 * checkouts nobody will take. Only those older than the longest a making takes, so another process
 * on the same data directory keeps the one it is making or taking.
 */
async function removeLeftovers(sparesDir: string, names: readonly string[]): Promise<void> {
  const leftovers = names.filter((name) => /\.(?:partial|taken)-[0-9a-f]{8}$/.test(name));
  for (const name of leftovers) {
    const path = join(sparesDir, name);
    const changed = (await lstat(path).catch(() => undefined))?.mtimeMs;
    if (changed !== undefined && Date.now() - changed > spareMakingMs) await rm(path, { recursive: true, force: true });
  }
}

/**
 * Makes the spare for `baseBranch` at `commit` unless one is there, beside its final path first so a
 * half-made one is never taken. Prepares it as a fresh workspace is (a shared clone, the harmless
 * origin) except the session branch and the sandbox's path to the objects, which the taker sets.
 */
export async function makeSpare(options: {
  mirror: Mirror;
  dataDir: string;
  baseBranch: string;
  commit: string;
  originUrl: string;
  log: Logger;
}): Promise<void> {
  const spare = sparePath(options.dataDir, options.mirror, options.baseBranch);
  const partial = `${spare}.partial-${randomBytes(4).toString('hex')}`;
  const signal = AbortSignal.timeout(spareMakingMs);
  try {
    const names = await readdir(join(options.dataDir, 'spares')).catch(() => [] as string[]);
    await removeLeftovers(join(options.dataDir, 'spares'), names);
    if (names.includes(basename(spare))) return;
    // Not recursive: a data directory removed meanwhile is not made again.
    await mkdir(join(options.dataDir, 'spares'), { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    await runHostGit(['clone', '--quiet', '--shared', '--no-checkout', '--', options.mirror.gitDir, partial], {
      signal,
    });
    const inSpare = { signal, gitDir: join(partial, '.git'), cwd: partial };
    await runHostGit(['remote', 'set-url', 'origin', options.originUrl], inSpare);
    await runHostGit(['--work-tree', partial, 'checkout', '--quiet', '--detach', options.commit], inSpare);
    await rename(partial, spare);
  } catch (error) {
    options.log.debug({ err: error }, 'no spare checkout made');
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
}
