import { isPatchbayError } from '../core/errors.ts';
import { mirrorPath, resolveRepo } from './mirror.ts';
import { runHostGit } from './host-git.ts';

export type DiffFile = {
  path: string;
  /** Set when the file was renamed or copied. */
  oldPath?: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed' | 'copied' | 'changed';
  additions: number;
  deletions: number;
  binary: boolean;
  /** The file's part of the unified diff, from its first `@@` on; empty for binary files. */
  patch: string;
};

export type DiffCommit = { sha: string; subject: string; author: string; at: string };

export type BranchDiff = { base: string; head: string; commits: DiffCommit[]; files: DiffFile[]; truncated: boolean };

export type BranchDiffOptions = {
  repo: string;
  dataDir: string;
  /** The commit the session started from. */
  base: string;
  /** The pushed commit to compare with it. */
  head: string;
  /** Only this commit's own change (against its parent), instead of the whole range. */
  commit?: string;
  /** Patches past this many bytes are cut off (whole files are left out). */
  maxPatchBytes?: number;
  signal: AbortSignal;
};

const defaultMaxPatchBytes = 8 * 1024 * 1024;
const sha = /^[0-9a-f]{7,64}$/;

/**
 * The pushed branch's change against its base, read from the host's bare mirror, which holds
 * exactly what was pushed. Never from the workspace: the model had its hands on that repository's
 * config and hooks. Returns undefined when the mirror does not have the commits (yet).
 */
export async function branchDiff(options: BranchDiffOptions): Promise<BranchDiff | undefined> {
  const { base, head, signal } = options;
  if (!sha.test(base) || !sha.test(head) || (options.commit !== undefined && !sha.test(options.commit)))
    return undefined;
  const gitDir = mirrorPath(options.dataDir, resolveRepo(options.repo));
  const git = (args: string[]) => runHostGit(args, { gitDir, signal });
  try {
    await git(['cat-file', '-e', `${base}^{commit}`]);
    await git(['cat-file', '-e', `${head}^{commit}`]);
  } catch (error) {
    if (isPatchbayError(error, 'git_failed')) return undefined;
    throw error;
  }
  const log = await git(['log', '--no-merges', '--format=%H%x00%an%x00%aI%x00%s', `${base}..${head}`]);
  const commits = log
    .split('\n')
    .filter(Boolean)
    .map((line): DiffCommit => {
      const [commitSha = '', author = '', at = '', subject = ''] = line.split('\0');
      return { sha: commitSha, author, at, subject };
    });
  let from = base;
  let to = head;
  if (options.commit !== undefined) {
    const full = commits.find((c) => c.sha.startsWith(options.commit!));
    if (!full) return undefined;
    to = full.sha;
    from = `${full.sha}^`;
  }
  // No renames from config, no external diff drivers or textconv: git's defaults for a bare mirror.
  const flags = ['--no-color', '--no-ext-diff', '--no-textconv', '-M', '--full-index'];
  const [numstat, patch] = await Promise.all([
    git(['diff', ...flags, '-z', '--numstat', from, to]),
    git(['diff', ...flags, '--patch', from, to]),
  ]);
  const { files, truncated } = splitPatch(patch, parseNumstat(numstat), options.maxPatchBytes ?? defaultMaxPatchBytes);
  return { base, head, commits, files, truncated };
}

type Stat = { path: string; oldPath?: string; additions: number; deletions: number; binary: boolean };

/** `--numstat -z`: `add\tdel\tpath\0`, or for a rename `add\tdel\t\0old\0new\0`. */
export function parseNumstat(text: string): Stat[] {
  const parts = text.split('\0');
  const stats: Stat[] = [];
  for (let i = 0; i < parts.length; i++) {
    const head = parts[i];
    if (!head) continue;
    const [add = '', del = '', path = ''] = head.split('\t');
    const binary = add === '-';
    const counts = { additions: binary ? 0 : Number(add), deletions: binary ? 0 : Number(del), binary };
    if (path) stats.push({ path, ...counts });
    else {
      const oldPath = parts[++i] ?? '';
      const newPath = parts[++i] ?? '';
      stats.push({ path: newPath, oldPath, ...counts });
    }
  }
  return stats;
}

/** Cuts a unified diff into files, in numstat's order (the same order git prints the patch in). */
export function splitPatch(patch: string, stats: Stat[], maxBytes: number): { files: DiffFile[]; truncated: boolean } {
  const chunks = patch.split(/^(?=diff --git )/m).filter((c) => c.startsWith('diff --git '));
  const files: DiffFile[] = [];
  let bytes = 0;
  for (const [i, stat] of stats.entries()) {
    const chunk = chunks[i] ?? '';
    bytes += chunk.length;
    if (bytes > maxBytes) return { files, truncated: true };
    const header = chunk.slice(0, Math.max(0, chunk.indexOf('\n@@')) || chunk.length);
    const hunks = chunk.indexOf('\n@@') >= 0 ? chunk.slice(chunk.indexOf('\n@@') + 1) : '';
    files.push({ ...stat, status: fileStatus(header, stat), patch: stat.binary ? '' : hunks });
  }
  return { files, truncated: false };
}

function fileStatus(header: string, stat: Stat): DiffFile['status'] {
  if (/^new file mode/m.test(header)) return 'added';
  if (/^deleted file mode/m.test(header)) return 'deleted';
  if (/^rename from/m.test(header) || stat.oldPath) return /^copy from/m.test(header) ? 'copied' : 'renamed';
  if (/^index /m.test(header)) return 'modified';
  return 'changed';
}
