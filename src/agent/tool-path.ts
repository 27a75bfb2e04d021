import { posix } from 'node:path';
import { PatchbayError } from '../core/errors.ts';

/**
 * A tool's path argument as a normalized path relative to the workspace ('.' for the root).
 * The sandbox enforces confinement itself; checking here too gives the model a clear message
 * before anything runs, and gives exec-based tools (search, git_diff) a safe relative path.
 */
export function toolPath(input: string, workdir: string): string {
  const raw = input.trim() === '' ? '.' : input.trim();
  if (raw.includes('\0')) throw new PatchbayError('path_refused', `Path ${JSON.stringify(input)} contains a NUL byte.`);
  if (raw === '~' || raw.startsWith('~/')) throw outside(input, workdir);
  let rel = raw;
  if (posix.isAbsolute(raw)) {
    const normalized = posix.normalize(raw).replace(/\/+$/, '') || '/';
    if (normalized === workdir) return '.';
    if (!normalized.startsWith(`${workdir}/`)) throw outside(input, workdir);
    rel = normalized.slice(workdir.length + 1);
  }
  rel = posix.normalize(rel).replace(/\/+$/, '') || '.';
  if (rel === '..' || rel.startsWith('../')) throw outside(input, workdir);
  return rel;
}

function outside(input: string, workdir: string): PatchbayError {
  return new PatchbayError(
    'path_refused',
    `Path ${JSON.stringify(input)} is outside the workspace (${workdir}). Use a path relative to the workspace root, like "src/index.ts".`,
  );
}
