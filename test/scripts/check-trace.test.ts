import { describe, expect, it } from 'vitest';
import { codeOf, declares, names, parseTraces, staleNames } from '../../scripts/check-trace.ts';

const doc = (steps: string) => `# Doc\n\n<!-- trace: demo; from: /hooks -->\n${steps}\n<!-- end trace -->\n`;
const files: Record<string, string> = {
  'src/a.ts':
    "app.post('/hooks', start);\nexport function start(): void {\n  new Runner().runOnce();\n}\nconst store = { create() {} };\n",
  'src/c.ts': 'export const later = 1;\n',
  'src/b.ts': 'export class Runner {\n  async runOnce(): Promise<void> {}\n}\nexport type Plan = { steps: number };\n',
};
const read = (path: string) => files[path];

describe('the trace check', () => {
  it('accepts a trace whose names are declared in the files of their step', () => {
    const traces = parseTraces(
      doc('1. `src/a.ts`: `start` then `store.create()`.\n2. `src/b.ts`: `Runner` → `runOnce`, a `Plan`.'),
    );
    expect(traces).toHaveLength(1);
    expect(traces[0]!.steps).toHaveLength(2);
    expect(staleNames(traces, read)).toEqual([]);
  });

  it('names a symbol that does not exist, or that lives in a file the step does not name', () => {
    const traces = parseTraces(doc('1. `src/a.ts`: `start` → `shipChanges`.\n2. `src/a.ts`: `runOnce`.'));
    expect(staleNames(traces, read)).toEqual([
      'trace "demo" line 4: `shipChanges` is declared in none of src/a.ts',
      'trace "demo" line 5: `runOnce` is declared in none of src/a.ts',
    ]);
  });

  it('names a missing file and a trace that opens more files than the limit', () => {
    const steps = Array.from({ length: 31 }, (_, i) => `${i + 1}. \`src/f${i}.ts\``).join('\n');
    const found = staleNames(parseTraces(doc(steps)), () => '');
    expect(found).toContain('trace "demo" opens 31 files (at most 30)');
    expect(staleNames(parseTraces(doc('1. `src/gone.ts`: `start`')), read)).toContain(
      'trace "demo" line 4: src/gone.ts does not exist',
    );
  });

  it('names a step whose first symbol no file of an earlier step names in its code, and a hop said not followable', () => {
    const traces = parseTraces(
      doc(
        '1. `src/b.ts`: `Runner` → `runOnce`.\n2. `src/a.ts`: `start` → `store.create()`.\n3. `src/c.ts`: `later`, not followable.',
      ),
    );
    expect(staleNames(traces, read)).toEqual([
      'trace "demo" line 4: starts at none of src/b.ts: none serves /hooks',
      'trace "demo" line 5: `start` is named in none of src/b.ts (the steps before)',
      'trace "demo" line 6: says a hop is not followable',
      'trace "demo" line 6: `later` is named in none of src/b.ts, src/a.ts (the steps before)',
    ]);
    // A name only in a comment of the step before does not count.
    expect(names(codeOf('// calls start()\n/* and start */ const y = 1;'), 'start')).toBe(false);
    expect(names(codeOf("const url = 'https://x'; start();"), 'start')).toBe(true);
    expect(names('restart();', 'start')).toBe(false);
  });

  it('fails a step that names a file in prose only, by its path or its name', () => {
    const traces = parseTraces(doc('1. `src/a.ts`: `start` calls src/via.ts.\n2. `src/b.ts`: `Runner`, then c.ts.'));
    expect(traces[0]!.steps[0]!.prose).toEqual(['src/via.ts']);
    expect(staleNames(traces, read)).toEqual([
      'trace "demo" line 4: names src/via.ts in prose only (a file the reader opens goes in backticks, where it is checked and counted)',
      'trace "demo" line 5: names c.ts in prose only (a file the reader opens goes in backticks, where it is checked and counted)',
    ]);
  });

  it('fails a trace that does not start at its route', () => {
    const fromElsewhere = parseTraces(doc('1. `src/b.ts`: `Runner`.'));
    expect(staleNames(fromElsewhere, read)).toEqual([
      'trace "demo" line 4: starts at none of src/b.ts: none serves /hooks',
    ]);
    const noRoute = parseTraces('<!-- trace: demo -->\n1. `src/a.ts`: `start`.\n<!-- end trace -->\n');
    expect(staleNames(noRoute, read)).toEqual([
      'trace "demo" says no route it starts from (`<!-- trace: name; from: /path -->`)',
    ]);
  });

  it('knows the ways TypeScript declares a name', () => {
    expect(declares('export const handle = () => 1;', 'handle')).toBe(true);
    expect(declares('  private async flush(rows: Row[]) {', 'flush')).toBe(true);
    expect(declares('return { accept, send };', 'accept')).toBe(true);
    expect(declares('export interface Inbox {\n  accept(d: D): Promise<void>;\n}', 'accept')).toBe(true);
    expect(declares('  async #work(job: Job): Promise<void> {', '#work')).toBe(true);
    expect(declares('const x = accept(1);', 'accept')).toBe(false);
    // A file that only imports a name does not declare it.
    expect(declares("import { accept, type Inbox } from './inbox.ts';\nexport const y = 1;", 'accept')).toBe(false);
  });
});
