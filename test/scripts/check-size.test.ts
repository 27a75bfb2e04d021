import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { measureSource, overruns } from '../../scripts/check-size.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');

/** Runs the check as .ci/run does, on a scratch copy of the tree. */
async function check(root: string): Promise<{ code: number; stderr: string; stdout: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(repo, 'scripts/check-size.ts'), '--root', root]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A function whose body has `lines` statements. */
const longFunction = (name: string, lines: number) =>
  `export function ${name}(): number {\n  let n = 0;\n${'  n += 1;\n'.repeat(lines)}  return n;\n}\n`;

describe('the size budget', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'patchbay-size-'));
    for (const dir of ['src', 'integrations', 'sandbox', 'db', 'web'])
      await cp(join(repo, dir), join(root, dir), { recursive: true });
    await mkdir(join(root, 'scripts/size-budget'), { recursive: true });
    await cp(join(repo, 'scripts/size-budget/baseline.json'), join(root, 'scripts/size-budget/baseline.json'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('passes on the tree as it is and says how much debt is left', async () => {
    const result = await check(root);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/debt left: \d+ files over 400 lines, \d+ functions over 80 \(goal 0\)/);
  });

  it('fails on a new function over 80 lines and on a new file over 400 lines', async () => {
    await writeFile(join(root, 'src/core/long-function.ts'), longFunction('long', 90));
    await writeFile(
      join(root, 'src/core/long-file.ts'),
      Array.from({ length: 45 }, (_, i) => longFunction(`f${i}`, 5)).join('\n'),
    );
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /src\/core\/long-function\.ts: a function of \d+ lines \(budget 80; split it into named steps\)/,
    );
    expect(result.stderr).toMatch(/src\/core\/long-file\.ts: \d+ lines \(budget 400; split the file\)/);
  });

  it('fails when a function already over budget grows', async () => {
    // The test puts a file with an old long function on the debt list, as the baseline holds such
    // files while they are being split.
    const path = 'src/core/old-debt.ts';
    const entry = { functionLines: [120] };
    await writeFile(join(root, path), longFunction('old', 100));
    const baseline = JSON.parse(await readFile(join(root, 'scripts/size-budget/baseline.json'), 'utf8'));
    await writeFile(join(root, 'scripts/size-budget/baseline.json'), JSON.stringify({ ...baseline, [path]: entry }));
    expect((await check(root)).code).toBe(0);
    // Replace the file by one whose only long function is one line longer than the baseline allows.
    await writeFile(join(root, path), longFunction('grown', entry.functionLines[0]! + 1));
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${path}: a function of`);
    expect(result.stderr).toContain(`(budget ${entry.functionLines[0]}; split it into named steps)`);
  });

  it('fails on an 81-line component whose body is one JSX return, and on an 81-line function of comments', async () => {
    const jsx = `export function Wide() {\n  return (\n    <div>\n${'      <p>line</p>\n'.repeat(75)}    </div>\n  );\n}\n`;
    await writeFile(join(root, 'web/src/views/wide.tsx'), jsx);
    const commented = `export function said(): number {\n${'  // why\n'.repeat(78)}  return 1;\n}\n`;
    await writeFile(join(root, 'src/core/said.ts'), commented);
    const result = await check(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('web/src/views/wide.tsx: a function of 81 lines');
    expect(result.stderr).toContain('src/core/said.ts: a function of 81 lines');
  });

  it('counts physical lines: a file by its lines, a function from its first line to its last, nested ones too', () => {
    const source = [
      'export class Store {', //           1
      '  get(id: string) {', //            2  method: lines 2-6
      '    const pick = (x: string) =>', // 3  arrow: lines 3-4
      '      x.trim();', //                4
      '    return pick(id);', //           5
      '  }', //                            6
      '}', //                              7
      '',
    ].join('\n');
    expect(measureSource('store.ts', source)).toEqual({ fileLines: 7, functionLines: [5, 2] });
  });

  it('compares the longest functions of a file pairwise with the baseline', () => {
    const baseline = { 'a.ts': { functionLines: [200, 90] } };
    expect(overruns({ 'a.ts': { functionLines: [150, 90] } }, baseline)).toEqual([]);
    expect(overruns({ 'a.ts': { functionLines: [150, 91] } }, baseline)).toEqual([
      'a.ts: a function of 91 lines (budget 90; split it into named steps)',
    ]);
    expect(overruns({ 'a.ts': { functionLines: [150, 90, 85] } }, baseline)).toEqual([
      'a.ts: a function of 85 lines (budget 80; split it into named steps)',
    ]);
    expect(overruns({ 'b.ts': { fileLines: 401, functionLines: [] } }, baseline)).toEqual([
      'b.ts: 401 lines (budget 400; split the file)',
    ]);
  });
});
