#!/usr/bin/env node
/**
 * The trace check run by `.ci/run`: the traces in docs/architecture.md must name only code that
 * exists. A trace is a numbered list between `<!-- trace: NAME -->` and `<!-- end trace -->`; each
 * step names one or more files in backticks (`src/x.ts`) and the symbols it follows in them
 * (`runSession`, `store.create`: the last part is what must be declared). Every file must exist,
 * every symbol must be declared in one of its step's files, and a trace may span at most ten files.
 *
 *   node scripts/check-trace.ts [--root DIR]   check; exit 1 with one line per stale name
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const maxFilesPerTrace = 10;

export type Trace = { name: string; steps: { line: number; files: string[]; symbols: string[] }[] };

const filePattern = /^[\w.-]+(?:\/[\w.-]+)+\.(?:ts|tsx)$/;
const symbolPattern = /^#?[A-Za-z_$][\w$]*(?:(?:\.|\(\)\.)#?[A-Za-z_$][\w$]*)*(?:\(\))?$/;

/** The traces of an architecture document, with each step's files and symbols. */
export function parseTraces(markdown: string): Trace[] {
  const traces: Trace[] = [];
  let current: Trace | undefined;
  markdown.split('\n').forEach((text, index) => {
    const start = /<!--\s*trace:\s*(.+?)\s*-->/.exec(text);
    if (start) {
      current = { name: start[1]!, steps: [] };
      traces.push(current);
      return;
    }
    if (/<!--\s*end trace\s*-->/.test(text)) {
      current = undefined;
      return;
    }
    if (!current) return;
    const names = [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1]!.trim());
    if (/^\s*\d+\.\s/.test(text)) current.steps.push({ line: index + 1, files: [], symbols: [] });
    const step = current.steps.at(-1);
    if (!step) return;
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

/** One line per missing file, undeclared symbol or over-long trace. */
export function staleNames(traces: Trace[], read: (path: string) => string | undefined): string[] {
  const found: string[] = [];
  for (const trace of traces) {
    const files = new Set(trace.steps.flatMap((step) => step.files));
    if (trace.steps.length === 0) found.push(`trace "${trace.name}" has no numbered steps`);
    if (files.size > maxFilesPerTrace)
      found.push(`trace "${trace.name}" spans ${files.size} files (at most ${maxFilesPerTrace})`);
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
    .map((trace) => `${trace.name} (${new Set(trace.steps.flatMap((s) => s.files)).size} files)`)
    .join(', ');
  process.stdout.write(`check-trace: every name exists: ${summary}\n`);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = main(process.argv.slice(2));
