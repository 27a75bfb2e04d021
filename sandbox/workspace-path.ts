import { lchown, lstat, mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';
import type { SandboxUser } from './sandbox-user.ts';

/**
 * Turns a caller's path into a normalized path relative to the workspace, without touching the
 * disk. Accepts `src/a.ts`, `./src/a.ts` and `/workspace/src/a.ts`; refuses anything that leaves
 * the workspace lexically. Returns '.' for the root.
 */
export function toWorkspaceRelative(input: string, workdir: string): string {
  if (input.includes('\0')) throw refused(input, 'contains a NUL byte');
  const raw = input.trim() === '' ? '.' : input;
  let rel: string;
  if (path.posix.isAbsolute(raw)) {
    const normalized = path.posix.normalize(raw).replace(/\/+$/, '') || '/';
    if (normalized === workdir) return '.';
    if (!normalized.startsWith(`${workdir}/`)) throw refused(input, `is outside the workspace ${workdir}`);
    rel = normalized.slice(workdir.length + 1);
  } else {
    rel = path.posix.normalize(raw).replace(/\/+$/, '') || '.';
  }
  if (rel === '..' || rel.startsWith('../')) throw refused(input, 'leaves the workspace');
  return rel;
}

export function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(path.sep) ? root : `${root}${path.sep}`);
}

/** Real host path of an existing workspace path, after following every symlink. */
export async function resolveExisting(root: string, rel: string, input: string): Promise<string> {
  const realRoot = await realpath(root);
  let real: string;
  try {
    real = await realpath(path.join(realRoot, rel));
  } catch (error) {
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) {
      // A dangling symlink is reported as refused when it points away, so nothing about the host leaks.
      throw new PatchbayError('not_found', `${input}: no such file or directory in the workspace`, { cause: error });
    }
    throw error;
  }
  if (!isInside(realRoot, real)) throw refused(input, 'resolves outside the workspace through a symlink');
  return real;
}

/**
 * Host path to write `rel` to: parents are created (only below an ancestor whose real path is
 * inside the workspace) and a symlink at the target is followed only when its real target is
 * inside too. A dangling symlink is refused, since writing through it would create its target.
 * Parents made here belong to `owner` when given.
 */
export async function resolveForWrite(root: string, rel: string, input: string, owner?: SandboxUser): Promise<string> {
  if (rel === '.') throw new PatchbayError('invalid_input', `${input}: is the workspace directory, not a file`);
  const realRoot = await realpath(root);
  const parentRel = path.posix.dirname(rel);
  const missing: string[] = [];
  let ancestor = parentRel;
  let realAncestor: string | undefined;
  for (;;) {
    try {
      realAncestor = await realpath(path.join(realRoot, ancestor));
      break;
    } catch (error) {
      if (isErrno(error, 'ENOTDIR')) throw new PatchbayError('invalid_input', `${input}: a parent is not a directory`);
      if (!isErrno(error, 'ENOENT')) throw error;
      if (await isSymlink(path.join(realRoot, ancestor))) throw refused(input, 'goes through a dangling symlink');
      missing.unshift(path.posix.basename(ancestor));
      ancestor = path.posix.dirname(ancestor);
    }
  }
  if (!isInside(realRoot, realAncestor)) throw refused(input, 'resolves outside the workspace through a symlink');
  if (!(await stat(realAncestor)).isDirectory()) {
    throw new PatchbayError('invalid_input', `${input}: a parent is not a directory`);
  }
  const realParent = path.join(realAncestor, ...missing);
  if (missing.length > 0) {
    await mkdir(realParent, { recursive: true });
    for (let i = 1; owner && i <= missing.length; i++)
      await lchown(path.join(realAncestor, ...missing.slice(0, i)), owner.uid, owner.gid);
  }

  const target = path.join(realParent, path.posix.basename(rel));
  const stats = await lstat(target).catch(() => undefined);
  if (stats?.isSymbolicLink()) {
    const real = await realpath(target).catch(() => undefined);
    if (real === undefined) throw refused(input, 'is a dangling symlink');
    if (!isInside(realRoot, real)) throw refused(input, 'resolves outside the workspace through a symlink');
    return real;
  }
  if (stats?.isDirectory()) throw new PatchbayError('invalid_input', `${input}: is a directory`);
  return target;
}

/** Workspace-relative posix path of a real host path inside the workspace. */
export function relativeTo(realRoot: string, real: string): string {
  return path.relative(realRoot, real).split(path.sep).join('/') || '.';
}

function refused(input: string, why: string): PatchbayError {
  return new PatchbayError('path_refused', `path refused: ${JSON.stringify(input)} ${why}`);
}

async function isSymlink(p: string): Promise<boolean> {
  const stats = await lstat(p).catch(() => undefined);
  return stats?.isSymbolicLink() ?? false;
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
