import { fenceFor } from '../../core/quote-untrusted.ts';
import type { ChangedFile } from '../../git/judged-change.ts';

/** Characters of diff the verifier is shown at most; the list of changed files always comes whole. */
export const maxVerifierDiffChars = 60_000;

/**
 * Shares `budget` characters among patches of these lengths: each file gets at most an equal share
 * of what is left, smallest first, so one huge file (a lockfile, generated data) can never push a
 * small real change out of view, and what a small file does not need goes to the large ones.
 */
export function allocateDiff(lengths: readonly number[], budget: number): number[] {
  const order = lengths.map((length, i) => ({ length, i })).sort((a, b) => a.length - b.length);
  const shares = new Array<number>(lengths.length).fill(0);
  let left = budget;
  for (const [k, { length, i }] of order.entries()) {
    const share = Math.min(length, Math.floor(left / (order.length - k)));
    shares[i] = share;
    left -= share;
  }
  return shares;
}

/**
 * What the verifier reads of the change: every changed file with its status, sizes and line counts,
 * then the diff (each changed function whole), each file's part cut to its share when the whole
 * does not fit. What it cannot see whole (cut, binary, no lines) is named in both places.
 */
export function verifierDiff(
  files: readonly ChangedFile[],
  maxChars = maxVerifierDiffChars,
  /** Repository files the checks and their setup are read from: a change to one is marked. */
  checkFiles: ReadonlySet<string> = new Set(),
): string {
  if (files.length === 0) return '# The change\nThe commit changes no files against the base.';
  const shares = allocateDiff(
    files.map((f) => f.patch.length),
    maxChars,
  );
  const unseen = files.filter((f, i) => f.binary || shares[i]! < f.patch.length || !hasLines(f));
  const shown = files.map((f, i) => {
    const share = shares[i]!;
    if (share >= f.patch.length) return f.patch;
    const cut = f.patch.slice(0, share);
    return `${cut.slice(0, Math.max(0, cut.lastIndexOf('\n') + 1))}[… ${f.patch.length - share} more characters of ${f.path} not shown]\n`;
  });
  const total = files.reduce((n, f) => n + f.patch.length, 0);
  const diff = shown.join('');
  const fence = fenceFor(diff);
  return [
    `# Changed files (${files.length}, from the judged commit itself)`,
    ...files.map((f, i) => fileLine(f, shares[i]!, checkFiles.has(f.path))),
    '',
    ...(unseen.length
      ? [
          `**Not seen whole: ${unseen.map((f) => f.path).join(', ')}.** ${total > maxChars ? `The diff is ${total} characters, more than the ${maxChars} shown, so each file's part is cut to a share of it. ` : ''}A change you could not see whole is not passed on trust: if what you cannot see could hold the change, a test or behaviour the task needs, correctness is at most 1.`,
          '',
        ]
      : []),
    '# Diff against the base',
    `${fence}diff`,
    diff || '(no lines)',
    fence,
  ].join('\n');
}

function hasLines(f: ChangedFile): boolean {
  return f.additions + f.deletions === 0 || /^@@ /m.test(f.patch);
}

function fileLine(f: ChangedFile, share: number, definesChecks: boolean): string {
  const size = (n: number | null) => (n === null ? '—' : `${n} bytes`);
  const notes = [
    ...(definesChecks ? ['defines how the checks run: they ran as this commit defines them'] : []),
    ...(f.binary ? ['binary: no lines shown'] : []),
    ...(!f.binary && share < f.patch.length ? [`cut: ${share} of ${f.patch.length} characters shown`] : []),
    ...(!f.binary && !hasLines(f) ? ['no lines shown'] : []),
  ];
  return `- ${f.status} \`${f.path.replace(/[\n`]/g, '?')}\`: ${size(f.oldSize)} → ${size(f.newSize)}, +${f.additions} −${f.deletions}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}
