#!/usr/bin/env node
/**
 * The trace check run by `.ci/run`: the traces in docs/architecture.md name every file a reader
 * opens on the way, and only code that exists. A trace is a numbered list between
 * `<!-- trace: NAME; from: ROUTE -->` and `<!-- end trace -->`. It starts where a reader starts:
 * the first step's files must serve ROUTE (the HTTP path, or the Socket Mode event type, written as a
 * string in their code). Each step names in backticks the files it opens (`src/x.ts`) and the
 * symbols it follows in them (`runSession`, `store.create`: the last part is what must be declared).
 * Every file must exist, every symbol must be declared in one of its step's files, and a file named
 * in prose only (a path or a file name outside backticks) fails the check: a file the reader opens
 * is named where it is checked and counted, and a trace may open at most `maxFilesPerTrace` files.
 * Each step must follow from the steps before: its first symbol (where the reader enters it) is
 * named in the code, not the comments, of a file an earlier step opened, which calls, sends to or
 * imports it; a call through a port counts by the member's name, so the step after a port starts
 * with the implementing member. No step may say a hop is "not followable".
 *
 *   node scripts/check-trace.ts [--root DIR]   check; exit 1 with one line per stale name
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The most files one trace may open, the route's and the thread reply's included. */
export const maxFilesPerTrace = 30;

/**
 * A step's `files` (in backticks) are the files the reader opens there; `prose` are file names
 * written outside backticks, each a failure.
 */
export type Trace = {
  name: string;
  /** Where the trace starts: an HTTP path or an event type the first step's files serve. */
  from: string | undefined;
  steps: { line: number; text: string; files: string[]; prose: string[]; symbols: string[] }[];
};

const filePattern = /^[\w.-]+(?:\/[\w.-]+)+\.(?:ts|tsx)$/;
const symbolPattern = /^#?[A-Za-z_$][\w$]*(?:(?:\.|\(\)\.)#?[A-Za-z_$][\w$]*)*(?:\(\))?$/;

/** The traces of an architecture document, with each step's files and symbols. */
export function parseTraces(markdown: string): Trace[] {
  const traces: Trace[] = [];
  let current: Trace | undefined;
  markdown.split('\n').forEach((text, index) => {
    const start = /<!--\s*trace:\s*([^;]+?)\s*(?:;\s*from:\s*(.+?)\s*)?-->/.exec(text);
    if (start) {
      current = { name: start[1]!, from: start[2], steps: [] };
      traces.push(current);
      return;
    }
    if (/<!--\s*end trace\s*-->/.test(text)) {
      current = undefined;
      return;
    }
    if (!current) return;
    const names = [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1]!.trim());
    if (/^\s*\d+\.\s/.test(text)) current.steps.push({ line: index + 1, text: '', files: [], prose: [], symbols: [] });
    const step = current.steps.at(-1);
    if (!step) return;
    step.text += `${text}\n`;
    const plain = text.replace(/`[^`]*`/g, ' ');
    for (const [path] of plain.matchAll(/(?<![\w./-])[\w./-]*[\w-]\.tsx?\b/g))
      if (!step.prose.includes(path)) step.prose.push(path);
    for (const name of names) {
      if (filePattern.test(name)) step.files.push(name);
      else if (symbolPattern.test(name)) step.symbols.push(name.replace(/\(\)/g, '').split('.').at(-1)!);
    }
  });
  return traces;
}

/** Whether `source` declares `symbol`: a function, class, variable, type, method or property. */
export function declares(source: string, symbol: string): boolean {
  const name = symbol.replace(/[$]/g, '\\$');
  // A name a file only imports is declared elsewhere.
  const code = source.replace(/^\s*import\s[^;]*;/gm, '');
  return [
    new RegExp(`\\b(?:function\\*?|class|const|let|var|interface|type|enum)\\s+${name}\\b`),
    new RegExp(
      `^\\s*(?:export\\s+)?(?:(?:public|private|protected|static|readonly|async|get|set)\\s+)*${name}\\s*(?:<[^>]*>)?\\s*[(:=?]`,
      'm',
    ),
    new RegExp(`[{,]\\s*${name}\\s*[,}]`),
    new RegExp(`[{,]\\s*(?:async\\s+)?${name}\\s*\\(`),
    new RegExp(`\\bexport\\s*\\{[^}]*\\b${name}\\b`),
  ].some((pattern) => pattern.test(code));
}

/** The code of a source file without its comments, where a symbol counts as named. */
export function codeOf(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/[^\n]*/g, '$1');
}

/** Whether `code` names `symbol` (a call, a property, an import), not only a longer name containing it. */
export function names(code: string, symbol: string): boolean {
  const name = symbol.replace(/[$]/g, '\\$');
  return new RegExp(`(?<![\\w$#])${name}(?![\\w$])`).test(code);
}

/**
 * Steps that do not follow from the steps before: their first symbol (where the reader enters the
 * step) is named in none of the files opened so far. Earlier steps count, not only the last one: a
 * call returns, and the next step is often called from the caller (the pipeline calls the
 * interpreter, then the session service).
 */
function unlinkedSteps(trace: Trace, read: (path: string) => string | undefined): string[] {
  const found: string[] = [];
  trace.steps.forEach((step, index) => {
    if (/not followable/i.test(step.text))
      found.push(`trace "${trace.name}" line ${step.line}: says a hop is not followable`);
    for (const file of step.prose)
      found.push(
        `trace "${trace.name}" line ${step.line}: names ${file} in prose only (a file the reader opens goes in backticks, where it is checked and counted)`,
      );
    if (index === 0) return;
    // What the reader has opened on the way here: the earlier steps' files.
    const before = [...new Set(trace.steps.slice(0, index).flatMap((earlier) => earlier.files))];
    const code = before.map((file) => codeOf(read(file) ?? '')).join('\n');
    const entry = step.symbols[0];
    if (entry === undefined) found.push(`trace "${trace.name}" line ${step.line}: names no symbol to follow`);
    else if (!names(code, entry))
      found.push(
        `trace "${trace.name}" line ${step.line}: \`${entry}\` is named in none of ${before.join(', ')} (the steps before)`,
      );
  });
  return found;
}

/** The first step must be where the request arrives: its files name the route in their code. */
function routeProblems(trace: Trace, read: (path: string) => string | undefined): string[] {
  const first = trace.steps[0];
  if (!trace.from)
    return [`trace "${trace.name}" says no route it starts from (\`<!-- trace: name; from: /path -->\`)`];
  if (!first) return [];
  const code = first.files.map((file) => codeOf(read(file) ?? '')).join('\n');
  const quoted = new RegExp(`['"\`]${trace.from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}['"\`]`);
  return quoted.test(code)
    ? []
    : [
        `trace "${trace.name}" line ${first.line}: starts at none of ${first.files.join(', ')}: none serves ${trace.from}`,
      ];
}

/** One line per missing file, undeclared symbol, step that does not follow, or over-long trace. */
export function staleNames(traces: Trace[], read: (path: string) => string | undefined): string[] {
  const found: string[] = [];
  for (const trace of traces) {
    const files = new Set(trace.steps.flatMap((step) => step.files));
    if (trace.steps.length === 0) found.push(`trace "${trace.name}" has no numbered steps`);
    if (files.size > maxFilesPerTrace)
      found.push(`trace "${trace.name}" opens ${files.size} files (at most ${maxFilesPerTrace})`);
    found.push(...routeProblems(trace, read));
    for (const step of trace.steps) {
      const sources = step.files.map((file) => ({ file, source: read(file) }));
      for (const { file, source } of sources)
        if (source === undefined) found.push(`trace "${trace.name}" line ${step.line}: ${file} does not exist`);
      if (step.files.length === 0 && step.symbols.length > 0)
        found.push(`trace "${trace.name}" line ${step.line}: names symbols but no file`);
      for (const symbol of step.symbols) {
        if (!sources.some(({ source }) => source !== undefined && declares(source, symbol))) {
          found.push(
            `trace "${trace.name}" line ${step.line}: \`${symbol}\` is declared in none of ${step.files.join(', ')}`,
          );
        }
      }
    }
    found.push(...unlinkedSteps(trace, read));
  }
  return found;
}

function main(argv: string[]): number {
  const rootIndex = argv.indexOf('--root');
  const root = rootIndex >= 0 ? argv[rootIndex + 1]! : join(dirname(fileURLToPath(import.meta.url)), '..');
  const document = join(root, 'docs/architecture.md');
  const traces = parseTraces(readFileSync(document, 'utf8'));
  const read = (path: string) => (existsSync(join(root, path)) ? readFileSync(join(root, path), 'utf8') : undefined);
  const found = staleNames(traces, read);
  if (traces.length === 0) found.push('docs/architecture.md has no traces');
  for (const line of found) process.stderr.write(`check-trace: ${line}\n`);
  if (found.length > 0) return 1;
  const summary = traces
    .map((trace) => `${trace.name} (${new Set(trace.steps.flatMap((s) => s.files)).size} files from ${trace.from})`)
    .join(', ');
  process.stdout.write(
    `check-trace: every name exists, every file opened is counted (at most ${maxFilesPerTrace}): ${summary}\n`,
  );
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = main(process.argv.slice(2));
