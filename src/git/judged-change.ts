import type { EvidenceRepo } from './evidence-repo.ts';

/** One file the judged commit changes against its base, as the evidence repository sees it. */
export type ChangedFile = {
  path: string;
  status: 'added' | 'modified' | 'deleted' | 'type-changed' | 'unmerged' | 'changed';
  /** Bytes before and after; null where the file does not exist (or is a submodule). */
  oldSize: number | null;
  newSize: number | null;
  additions: number;
  deletions: number;
  /** Git shows no lines of it (it holds NUL bytes): the verifier cannot read this change. */
  binary: boolean;
  /** The file's part of the diff (with each changed function whole), headers included. */
  patch: string;
};

// No renames: a file moved and changed shows as a deletion and an addition, each in full.
const diffFlags = ['--no-ext-diff', '--no-textconv', '--no-color', '--no-renames', '--full-index'];
const statusOf: Record<string, ChangedFile['status']> = {
  A: 'added',
  M: 'modified',
  D: 'deleted',
  T: 'type-changed',
  U: 'unmerged',
};
const zeroId = /^0+$/;

/**
 * Every file the judged commit changes, with its status, sizes, line counts and its part of the
 * diff, computed in the evidence repository (never in the agent's workspace, whose config and
 * attributes could hide or rewrite any of it).
 */
export async function judgedChange(evidence: EvidenceRepo, signal: AbortSignal): Promise<ChangedFile[]> {
  const range = [evidence.baseCommit, evidence.commit];
  const [raw, numstat, patch] = await Promise.all([
    evidence.git(['diff', ...diffFlags, '-z', '--raw', '--abbrev=64', ...range], signal),
    evidence.git(['diff', ...diffFlags, '-z', '--numstat', ...range], signal),
    evidence.git(['diff', ...diffFlags, '--function-context', ...range], signal),
  ]);
  const entries = parseRaw(raw);
  const counts = parseNumstat(numstat);
  const sizes = await blobSizes(
    evidence,
    entries.map((e) => e.path),
    signal,
  );
  const chunks = patch.split(/^(?=diff --git )/m).filter((c) => c.startsWith('diff --git '));
  // --raw, --numstat and the patch list files in the same order (one diff, the same options).
  return entries.map((entry, i): ChangedFile => {
    const count = counts[i];
    return {
      path: entry.path,
      status: statusOf[entry.status] ?? 'changed',
      oldSize: zeroId.test(entry.oldId) ? null : (sizes.get(entry.oldId) ?? null),
      newSize: zeroId.test(entry.newId) ? null : (sizes.get(entry.newId) ?? null),
      additions: count?.additions ?? 0,
      deletions: count?.deletions ?? 0,
      binary: count?.binary ?? false,
      patch: chunks[i] ?? '',
    };
  });
}

type RawEntry = { status: string; oldId: string; newId: string; path: string };

/** `--raw -z`: `:oldmode newmode oldid newid status\0path\0` per file (no renames, so one path). */
export function parseRaw(text: string): RawEntry[] {
  const parts = text.split('\0');
  const entries: RawEntry[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const fields = (parts[i] ?? '').replace(/^:/, '').split(' ');
    const path = parts[i + 1] ?? '';
    if (fields.length < 5 || !path) continue;
    entries.push({ oldId: fields[2]!, newId: fields[3]!, status: (fields[4] ?? '').charAt(0), path });
  }
  return entries;
}

function parseNumstat(text: string): { additions: number; deletions: number; binary: boolean }[] {
  return text
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const [add = '', del = ''] = line.split('\t');
      const binary = add === '-';
      return { additions: binary ? 0 : Number(add), deletions: binary ? 0 : Number(del), binary };
    });
}

async function blobSizes(evidence: EvidenceRepo, paths: string[], signal: AbortSignal): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  if (paths.length === 0) return sizes;
  // `-l` prints each blob's size; literal pathspecs, so no file name is read as a pattern.
  const list = (commit: string) =>
    evidence.git(['--literal-pathspecs', 'ls-tree', '-r', '-l', '-z', '--full-tree', commit, '--', ...paths], signal);
  for (const listing of await Promise.all([list(evidence.baseCommit), list(evidence.commit)])) {
    for (const line of listing.split('\0')) {
      const [meta = '', ...name] = line.split('\t');
      const [, type, id, size] = meta.split(/\s+/);
      if (name.length && type === 'blob' && id && size) sizes.set(id, Number(size));
    }
  }
  return sizes;
}
