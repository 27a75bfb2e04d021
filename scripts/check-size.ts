#!/usr/bin/env node
/**
 * The size budget run by `.ci/run`: no production file over 400 lines and no function over 80,
 * counted in physical lines as a reader scrolls them: a file's every line, and a function from the
 * line it starts on to the line it ends on, comments and blank lines included (`.ts` and `.tsx`
 * alike; a component whose body is one JSX `return` counts all of it). Functions are declarations,
 * expressions, arrow functions and methods, parsed with oxc. Code that was over budget when the
 * check landed is listed in scripts/size-budget/baseline.json: such a file may shrink, never grow,
 * and may not gain another function over budget; everything else must be within budget. The
 * baseline is a debt list that only goes down: `--write` records the current state and refuses to
 * add an entry. It is empty now (no debt left), so every file and function is held to the budget.
 *
 *   node scripts/check-size.ts [--root DIR]           check; exit 1 with one line per violation
 *   node scripts/check-size.ts [--root DIR] --write   shrink the baseline to the current state
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseSync, Visitor, type Function as FunctionNode, type ArrowFunctionExpression } from 'oxc-parser';
import { z } from 'zod';

/** The production folders; tests, benches and scripts are not held to the budget. */
const productionRoots = ['src', 'integrations', 'sandbox', 'db', 'web'];
const FILE_LIMIT = 400;
const FUNCTION_LIMIT = 80;

/** Per file: its length when over 400 lines, and the lengths of its functions over 80, longest first. */
const Budget = z.record(
  z.string(),
  z.object({ fileLines: z.number().int().optional(), functionLines: z.array(z.number().int()) }),
);
export type Budget = z.infer<typeof Budget>;

/** What is over budget under `root`, per file, in physical lines. */
export function measure(root: string): Budget {
  const budget: Budget = {};
  for (const path of productionFiles(root)) {
    const { fileLines, functionLines } = measureSource(path, readFileSync(join(root, path), 'utf8'));
    const long = functionLines.filter((lines) => lines > FUNCTION_LIMIT).sort((a, b) => b - a);
    if (fileLines <= FILE_LIMIT && long.length === 0) continue;
    budget[path] = { ...(fileLines > FILE_LIMIT && { fileLines }), functionLines: long };
  }
  return budget;
}

/** The physical lines of a source file and of each function in it (nested ones counted on their own too). */
export function measureSource(path: string, source: string): { fileLines: number; functionLines: number[] } {
  const lineStarts = [0];
  for (let i = source.indexOf('\n'); i >= 0; i = source.indexOf('\n', i + 1)) lineStarts.push(i + 1);
  const lineOf = (offset: number) => {
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (lineStarts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return low + 1;
  };
  const parsed = parseSync(path, source);
  if (parsed.errors.length > 0)
    throw new Error(`check-size: cannot parse ${path}: ${parsed.errors.map((e) => e.message).join('; ')}`);
  const functionLines: number[] = [];
  const count = (node: FunctionNode | ArrowFunctionExpression) => {
    // A method's key and a declaration's name sit on the function's first line; `end` is past the last character.
    functionLines.push(lineOf(node.end - 1) - lineOf(node.start) + 1);
  };
  new Visitor({ FunctionDeclaration: count, FunctionExpression: count, ArrowFunctionExpression: count }).visit(
    parsed.program,
  );
  const fileLines = source.endsWith('\n') ? lineStarts.length - 1 : lineStarts.length;
  return { fileLines, functionLines };
}

function productionFiles(root: string): string[] {
  return productionRoots
    .filter((dir) => existsSync(join(root, dir)))
    .flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
        .filter((file) => /\.tsx?$/.test(file) && !/\.(test|d)\.ts$/.test(file))
        .filter((file) => !file.split('/').includes('node_modules'))
        .map((file) => join(dir, file)),
    )
    .sort();
}

/** One line per place where `now` is over budget beyond what `baseline` allows. */
export function overruns(now: Budget, baseline: Budget): string[] {
  const found: string[] = [];
  for (const [path, entry] of Object.entries(now)) {
    const allowed = baseline[path];
    if (entry.fileLines !== undefined && entry.fileLines > (allowed?.fileLines ?? FILE_LIMIT)) {
      found.push(`${path}: ${entry.fileLines} lines (budget ${allowed?.fileLines ?? FILE_LIMIT}; split the file)`);
    }
    entry.functionLines.forEach((lines, index) => {
      const cap = allowed?.functionLines[index] ?? FUNCTION_LIMIT;
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
