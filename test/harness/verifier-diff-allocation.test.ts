import { describe, expect, it } from 'vitest';
import type { ChangedFile } from '../../src/git/judged-change.ts';
import { allocateDiff, verifierDiff } from '../../src/harness/verify/verifier-diff.ts';

const file = (path: string, patch: string, extra: Partial<ChangedFile> = {}): ChangedFile => ({
  path,
  status: 'modified',
  oldSize: 100,
  newSize: 120,
  additions: 1,
  deletions: 1,
  binary: false,
  patch,
  ...extra,
});
const patchOf = (path: string, body: string) =>
  `diff --git a/${path} b/${path}\nindex 1..2 100644\n--- a/${path}\n+++ b/${path}\n@@ -1 +1 @@\n${body}`;

describe('what of a large change the verifier is shown', () => {
  it.each([
    ['all fit', [10, 20], 100, [10, 20]],
    ['a huge file leaves the small one whole', [1000, 10], 100, [90, 10]],
    ['two huge files share equally', [1000, 1000], 100, [50, 50]],
    ['what a small file does not need goes to the others', [5, 1000, 1000], 105, [5, 50, 50]],
    ['nothing to share', [10], 0, [0]],
  ])('%s', (_name, lengths, budget, shares) => {
    const got = allocateDiff(lengths, budget);
    expect(got).toEqual(shares);
    expect(got.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget);
  });

  it('keeps the real change in view when a huge file sorts before it, and says what it cut', () => {
    const huge = patchOf('a-generated.json', `${'+"x": 1,\n'.repeat(20_000)}`);
    const real = patchOf('src/z.js', '-  assert.strictEqual(add(2, 3), 5);\n+  // removed\n');
    const shown = verifierDiff([file('a-generated.json', huge, { additions: 20_000 }), file('src/z.js', real)], 60_000);
    expect(shown).toContain('-  assert.strictEqual(add(2, 3), 5);');
    expect(shown.length).toBeLessThan(62_000);
    expect(shown).toContain('**Not seen whole: a-generated.json.**');
    expect(shown).toContain('not passed on trust');
    expect(shown).toMatch(
      /`a-generated\.json`: 100 bytes → 120 bytes, \+20000 −1 \(cut: \d+ of \d+ characters shown\)/,
    );
    expect(shown).toMatch(/more characters of a-generated\.json not shown\]/);
  });

  it('lists every changed file with status and sizes, and names one the diff shows no lines of', () => {
    const shown = verifierDiff([
      file('img.png', 'diff --git a/img.png b/img.png\nBinary files differ\n', {
        binary: true,
        additions: 0,
        deletions: 0,
      }),
      file('test.js', patchOf('test.js', '-a\n+b\n'), { status: 'added', oldSize: null, newSize: 4 }),
    ]);
    expect(shown).toContain('- modified `img.png`: 100 bytes → 120 bytes, +0 −0 (binary: no lines shown)');
    expect(shown).toContain('- added `test.js`: — → 4 bytes, +1 −1');
    expect(shown).toContain('**Not seen whole: img.png.**');
  });

  it('says nothing is unseen when the whole diff fits', () => {
    const shown = verifierDiff([file('a.js', patchOf('a.js', '-a\n+b\n'))]);
    expect(shown).not.toContain('Not seen whole');
    expect(shown).toContain('# Diff against the base');
  });
});
