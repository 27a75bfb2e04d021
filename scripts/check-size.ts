#!/usr/bin/env node
/**
 * The size budget run by `.ci/run`: no production file over 400 lines and no function over 80
 * (Biome's noExcessiveLinesPerFile and noExcessiveLinesPerFunction, configured in
 * scripts/size-budget/biome.json). Code that was over budget when the check landed is listed in
 * scripts/size-budget/baseline.json: such a file may shrink, never grow, and may not gain another
 * function over budget; everything else must be within budget. The baseline is a debt list that
 * only goes down: `--write` records the current state and refuses to add an entry.
 *
 *   node scripts/check-size.ts [--root DIR]           check; exit 1 with one line per violation
 *   node scripts/check-size.ts [--root DIR] --write   shrink the baseline to the current state
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';

/** The production folders; tests, benches and scripts are not held to the budget. */
const productionRoots = ['src', 'integrations', 'sandbox', 'db', 'web'];

/** Per file: its length when over 400 lines, and the lengths of its functions over 80, longest first. */
const Budget = z.record(
  z.string(),
  z.object({ fileLines: z.number().int().optional(), functionLines: z.array(z.number().int()) }),
);
export type Budget = z.infer<typeof Budget>;

const Diagnostic = z.object({
  category: z.string(),
  message: z.string(),
  location: z.object({ path: z.string() }),
});
const Report = z.object({ diagnostics: z.array(Diagnostic) });

/** What Biome reports over budget under `root`, per file. */
export function measure(root: string): Budget {
  const here = dirname(fileURLToPath(import.meta.url));
  const biome = join(here, '../node_modules/.bin/biome');
  const roots = productionRoots.filter((dir) => existsSync(join(root, dir)));
  let output: string;
  try {
    output = execFileSync(
      biome,
      ['lint', '--config-path', join(here, 'size-budget'), '--reporter=json', '--max-diagnostics=none', ...roots],
      {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        maxBuffer: 64 * 1024 * 1024,
      },
    );
  } catch (error) {
    // Biome exits 1 when it reports anything; its report is still on stdout.
    output = (error as { stdout?: string }).stdout ?? '';
  }
  const report = Report.parse(JSON.parse(output));
  const budget: Budget = {};
  for (const diagnostic of report.diagnostics) {
    // A suppression comment for another rule is "unused" under this configuration's two rules.
    if (diagnostic.category.startsWith('suppressions/')) continue;
    const lines = Number(/\((\d+)\)/.exec(diagnostic.message)?.[1]);
    if (!Number.isInteger(lines))
      throw new Error(`check-size: cannot read a line count from Biome's "${diagnostic.message}"`);
    budget[diagnostic.location.path] ??= { functionLines: [] };
    const entry = budget[diagnostic.location.path]!;
    if (diagnostic.category.endsWith('noExcessiveLinesPerFile')) entry.fileLines = lines;
    else if (diagnostic.category.endsWith('noExcessiveLinesPerFunction')) entry.functionLines.push(lines);
    else throw new Error(`check-size: unexpected rule ${diagnostic.category}`);
  }
  for (const entry of Object.values(budget)) entry.functionLines.sort((a, b) => b - a);
  return budget;
}

/** One line per place where `now` is over budget beyond what `baseline` allows. */
export function overruns(now: Budget, baseline: Budget): string[] {
  const found: string[] = [];
  for (const [path, entry] of Object.entries(now)) {
    const allowed = baseline[path];
    if (entry.fileLines !== undefined && entry.fileLines > (allowed?.fileLines ?? 400)) {
      found.push(`${path}: ${entry.fileLines} lines (budget ${allowed?.fileLines ?? 400}; split the file)`);
    }
    entry.functionLines.forEach((lines, index) => {
      const cap = allowed?.functionLines[index] ?? 80;
      if (lines > cap) found.push(`${path}: a function of ${lines} lines (budget ${cap}; split it into named steps)`);
    });
  }
  return found;
}

function total(budget: Budget): { files: number; functions: number } {
  const entries = Object.values(budget);
  return {
    files: entries.filter((e) => e.fileLines !== undefined).length,
    functions: entries.reduce((n, e) => n + e.functionLines.length, 0),
  };
}

function main(argv: string[]): number {
  const rootIndex = argv.indexOf('--root');
  const root = rootIndex >= 0 ? argv[rootIndex + 1]! : join(dirname(fileURLToPath(import.meta.url)), '..');
  const baselinePath = join(root, 'scripts/size-budget/baseline.json');
  const baseline = existsSync(baselinePath) ? Budget.parse(JSON.parse(readFileSync(baselinePath, 'utf8'))) : {};
  const now = measure(root);
  const found = overruns(now, baseline);
  for (const line of found) process.stderr.write(`check-size: ${line}\n`);
  if (found.length > 0) return 1;
  const debt = total(now);
  if (argv.includes('--write')) writeFileSync(baselinePath, `${JSON.stringify(now, null, 2)}\n`);
  process.stdout.write(
    `check-size: within budget; debt left: ${debt.files} files over 400 lines, ${debt.functions} functions over 80 (goal 0)\n`,
  );
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = main(process.argv.slice(2));
