import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { PatchbayError } from '../core/errors.ts';
import { assertValidBranchName, isValidBranchName } from './branch-name.ts';
import {
  defaultBranch,
  describeRepo,
  ensureMirror,
  resolveBranch,
  withMirrorLock,
  mirrorPath,
  resolveRepo,
} from './mirror.ts';
import type { Mirror } from './mirror.ts';
import { runHostGit } from './host-git.ts';
import { makeSpare, sparePath, takeSpare } from './spare-checkout.ts';
import type { Logger as PinoLogger } from 'pino';

export type PrepareWorkspaceOptions = {
  /** A git URL or a path to a repository on the host. */
  repo: string;
  /** Branch to start from; the repository's default branch when omitted. */
  baseBranch?: string;
  /** The session's branch: created from the base, or checked out where it is when the remote has it. */
  branch: string;
  /** Host directory that becomes the repository root (the sandbox's /workspace). */
  workspaceDir: string;
  dataDir: string;
  log: Logger;
  signal: AbortSignal;
  /** Extra environment for network git calls (credentials). */
  env?: Record<string, string>;
  /**
   * Where the sandbox shows the mirror's objects (read-only). With it, the workspace is a `--shared`
   * clone whose git alternates point there: no copy of the history, only the checkout is written.
   */
  sharedObjectsPath?: string;
};

export type PreparedWorkspace = { baseBranch: string; baseCommit: string; reused: boolean };

/**
 * Where the session's sandboxed git points `origin`: the sandbox has no network and no token, and the
 * harness pushes, so a model's `git push` should fail fast with a name that says why.
 */
export const workspaceOriginUrl = 'https://patchbay.invalid/the-harness-pushes-this-branch.git';

/** Written by the host when the branch is made; read back on follow-ups as data, never trusted. */
export const baseFile = 'patchbay-base';
export const BaseRecord = z.object({
  baseBranch: z.string().refine(isValidBranchName),
  baseCommit: z.string().regex(/^[0-9a-f]{40,64}$/),
});

/**
 * Makes `workspaceDir` a checkout of `repo` on a new branch `branch`, cloned from the host's mirror
 * (refreshed first). A workspace that already has `.git` is a follow-up run and is left as it is.
 * Call before the sandbox runs anything in a fresh workspace: the host runs git in it only while
 * creating it.
 */
export async function prepareWorkspace(options: PrepareWorkspaceOptions): Promise<PreparedWorkspace> {
  const { log, signal } = options;
  assertValidBranchName(options.branch);
  if (options.baseBranch !== undefined) assertValidBranchName(options.baseBranch, 'base branch');
  const gitDir = mirrorPath(options.dataDir, resolveRepo(options.repo));
  return withMirrorLock(gitDir, async () => {
    const mirror = await ensureMirror(options.repo, { ...options, updateHead: options.baseBranch === undefined });
    const cutShort = await clearCutShort(options.workspaceDir, log);
    if (!cutShort && (await hasGitEntry(options.workspaceDir))) {
      const base = await readBaseRecord(options.workspaceDir, log);
      if (base) return { ...base, reused: true };
      // The sandbox removed or rewrote our record; report the base as it is now.
      const baseBranch = options.baseBranch ?? (await requireDefaultBranch(mirror, signal));
      return { baseBranch, baseCommit: await requireBranch(mirror, baseBranch, signal), reused: true };
    }
    const { baseBranch, baseCommit, existing } = await resolveSessionBase(options, mirror);
    await claimEmptyWorkspace(options.workspaceDir);
    const spared =
      options.sharedObjectsPath !== undefined && (await fromSpare(mirror, { ...options, baseBranch, baseCommit }));
    if (!spared) await cloneInto(mirror, { ...options, baseBranch, baseCommit });
    await rm(preparingMarker(options.workspaceDir), { force: true });
    log.info(
      { branch: options.branch, baseBranch, baseCommit, existingBranch: existing !== undefined, spare: spared },
      'workspace prepared',
    );
    return { baseBranch, baseCommit, reused: false };
  });
}

/**
 * The session's base branch, its tip, and the commit the session's branch starts from. A branch the
 * remote already has (a pull request's head, or a session whose workspace was reaped) is continued
 * where it is, so the harness's push stays a fast-forward; the session's own changes are then
 * measured from that tip.
 */
export async function resolveSessionBase(
  options: Pick<PrepareWorkspaceOptions, 'baseBranch' | 'branch' | 'signal'>,
  mirror: Mirror,
) {
  const baseBranch = options.baseBranch ?? (await requireDefaultBranch(mirror, options.signal));
  if (baseBranch === options.branch)
    throw new PatchbayError('invalid_input', `The session branch must differ from the base branch ${baseBranch}`);
  const baseTip = await requireBranch(mirror, baseBranch, options.signal);
  const existing = await resolveBranch(mirror, options.branch, options.signal);
  return { baseBranch, baseTip, existing, baseCommit: existing ?? baseTip };
}

/** A fresh workspace from the spare checkout, when there is one of `baseCommit`: its branch made, its base recorded. */
async function fromSpare(
  mirror: Mirror,
  options: PrepareWorkspaceOptions & { baseBranch: string; baseCommit: string },
): Promise<boolean> {
  const { workspaceDir, signal } = options;
  if (!(await takeSpare(sparePath(options.dataDir, mirror, options.baseBranch), workspaceDir, options.baseCommit)))
    return false;
  try {
    // Nothing of the sandbox's in it yet: safe to run git here on the host.
    const inWorkspace = { signal, gitDir: join(workspaceDir, '.git'), cwd: workspaceDir };
    await runHostGit(
      ['--work-tree', workspaceDir, 'checkout', '--quiet', '--no-track', '-b', options.branch, options.baseCommit],
      inWorkspace,
    );
    await writeFile(join(workspaceDir, '.git', 'objects', 'info', 'alternates'), `${options.sharedObjectsPath}\n`);
    await writeFile(
      join(workspaceDir, '.git', baseFile),
      `${JSON.stringify({ baseBranch: options.baseBranch, baseCommit: options.baseCommit })}\n`,
    );
    return true;
  } catch (error) {
    await emptyWorkspace(workspaceDir);
    options.log.warn({ err: error }, 'the spare checkout could not be used; cloning instead');
    return false;
  }
}

async function cloneInto(
  mirror: Mirror,
  options: PrepareWorkspaceOptions & { baseBranch: string; baseCommit: string },
): Promise<void> {
  const { workspaceDir } = options;
  try {
    await cloneAndBranch(mirror, options);
  } catch (error) {
    // A half-made clone would pass for a follow-up workspace next time: empty the directory again.
    await emptyWorkspace(workspaceDir);
    throw error;
  }
}

async function cloneAndBranch(
  mirror: Mirror,
  options: PrepareWorkspaceOptions & { baseBranch: string; baseCommit: string },
): Promise<void> {
  const { workspaceDir, signal } = options;
  // --no-hardlinks: hardlinked object files would let the sandbox write into the mirror's objects.
  // --shared links nothing: the workspace reads the mirror's objects (read-only inside the sandbox)
  // and writes new ones to its own store.
  const objects = options.sharedObjectsPath ? '--shared' : '--no-hardlinks';
  if (options.sharedObjectsPath) {
    // Workspaces borrow these objects: pruning unreachable ones (a branch deleted upstream) could
    // take a base commit from under a workspace.
    await runHostGit(['config', 'gc.pruneExpire', 'never'], { signal, gitDir: mirror.gitDir });
  }
  await runHostGit(
    ['clone', '--quiet', objects, '--no-checkout', '--branch', options.baseBranch, '--', mirror.gitDir, workspaceDir],
    { signal },
  );
  // Fresh clone, nothing of the sandbox's in it yet: safe to run git here on the host.
  const inWorkspace = { signal, gitDir: join(workspaceDir, '.git'), cwd: workspaceDir };
  await runHostGit(['remote', 'set-url', 'origin', workspaceOriginUrl], inWorkspace);
  await runHostGit(
    ['--work-tree', workspaceDir, 'checkout', '--quiet', '--no-track', '-b', options.branch, options.baseCommit],
    inWorkspace,
  );
  // From here on git runs only inside the sandbox, where the mirror's objects are at this path.
  if (options.sharedObjectsPath)
    await writeFile(join(workspaceDir, '.git', 'objects', 'info', 'alternates'), `${options.sharedObjectsPath}\n`);
  const record = { baseBranch: options.baseBranch, baseCommit: options.baseCommit };
  await writeFile(join(workspaceDir, '.git', baseFile), `${JSON.stringify(record)}\n`);
}

/**
 * Beside the workspace, not in it (a clone needs an empty directory, and the sandbox never sees it):
 * there from before the host puts anything into a fresh workspace until its branch and base record
 * are written, so one found at the start is a preparation a stopped server cut short.
 */
function preparingMarker(workspaceDir: string): string {
  return `${workspaceDir}.preparing`;
}

/**
 * A fresh workspace must be empty: anything in it without a `.git` is not the host's (the sandbox
 * emptied or replaced it), and the host runs no git there. Marks the preparation as begun.
 */
async function claimEmptyWorkspace(workspaceDir: string): Promise<void> {
  await mkdir(workspaceDir, { recursive: true });
  if ((await readdir(workspaceDir)).length > 0) {
    throw new PatchbayError(
      'git_failed',
      `Workspace ${workspaceDir} is not empty and has no .git; refusing to clone into it`,
    );
  }
  await writeFile(preparingMarker(workspaceDir), '');
}

/**
 * Empties a workspace whose preparation was cut short (a SIGKILL while the spare checkout's entries
 * were moved in, or between the clone and the base record): the host's own half-made checkout, which
 * the sandbox never ran in. The marker stays until the new preparation ends. True when it did.
 */
async function clearCutShort(workspaceDir: string, log: Logger): Promise<boolean> {
  if (!(await lstat(preparingMarker(workspaceDir)).catch(() => undefined))) return false;
  const entries = await emptyWorkspace(workspaceDir);
  log.warn({ entries }, 'the preparation of this workspace was cut short; preparing it again');
  return true;
}

/** Removes everything in the workspace (symlinks as they are, never followed); how many entries it had. */
async function emptyWorkspace(workspaceDir: string): Promise<number> {
  const entries = await readdir(workspaceDir).catch(() => [] as string[]);
  await Promise.all(entries.map((entry) => rm(join(workspaceDir, entry), { recursive: true, force: true })));
  return entries.length;
}

async function hasGitEntry(workspaceDir: string): Promise<boolean> {
  try {
    await lstat(join(workspaceDir, '.git'));
    return true;
  } catch {
    return false;
  }
}

async function readBaseRecord(
  workspaceDir: string,
  log: Logger,
): Promise<Omit<PreparedWorkspace, 'reused'> | undefined> {
  try {
    if (!(await lstat(join(workspaceDir, '.git'))).isDirectory()) return undefined;
    // O_NOFOLLOW and O_NONBLOCK: the sandbox may have replaced the file by a symlink or a FIFO.
    const handle = await open(
      join(workspaceDir, '.git', baseFile),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
    try {
      if (!(await handle.stat()).isFile()) return undefined;
      const buffer = Buffer.alloc(4096);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      const parsed = BaseRecord.safeParse(JSON.parse(buffer.subarray(0, bytesRead).toString('utf8')));
      if (parsed.success) return parsed.data;
    } finally {
      await handle.close();
    }
  } catch {
    // Falls through to the warning: missing or unreadable.
  }
  log.warn({ workspaceDir }, 'workspace base record missing or invalid; reporting the current base branch instead');
  return undefined;
}

export async function requireDefaultBranch(mirror: Mirror, signal: AbortSignal): Promise<string> {
  const branch = await defaultBranch(mirror, signal);
  if (branch === undefined) {
    throw new PatchbayError(
      'git_failed',
      `Repository ${describeRepo(mirror.source)} has no default branch (is it empty?)`,
    );
  }
  return branch;
}

export async function requireBranch(mirror: Mirror, branch: string, signal: AbortSignal): Promise<string> {
  const commit = await resolveBranch(mirror, branch, signal);
  if (commit === undefined) {
    throw new PatchbayError('git_failed', `Branch ${branch} does not exist in ${describeRepo(mirror.source)}`);
  }
  return commit;
}

/**
 * Makes the spare checkout the next fresh workspace on `repo` and `baseBranch` starts from (see
 * spare-checkout.ts), at the mirror's current tip of the branch. Call when a run ends, off every
 * session's start; never throws.
 */
export async function prepareSpareCheckout(options: {
  repo: string;
  baseBranch: string;
  dataDir: string;
  log: PinoLogger;
}): Promise<void> {
  try {
    const source = resolveRepo(options.repo);
    const mirror: Mirror = { source, gitDir: mirrorPath(options.dataDir, source) };
    const commit = await resolveBranch(mirror, options.baseBranch, AbortSignal.timeout(60_000));
    if (!commit) return;
    await withMirrorLock(`${mirror.gitDir}:spare`, () =>
      makeSpare({
        mirror,
        dataDir: options.dataDir,
        baseBranch: options.baseBranch,
        commit,
        originUrl: workspaceOriginUrl,
        log: options.log,
      }),
    );
  } catch (error) {
    options.log.debug({ err: error }, 'no spare checkout made');
  }
}
