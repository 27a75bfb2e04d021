import { describe, expect, it } from 'vitest';
import { declares, parseTraces, staleNames } from '../../scripts/check-trace.ts';

const doc = (steps: string) => `# Doc\n\n<!-- trace: demo -->\n${steps}\n<!-- end trace -->\n`;
const files: Record<string, string> = {
  'src/a.ts': 'export function start(): void {}\nconst store = { create() {} };\n',
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

  it('names a missing file and a trace over ten files', () => {
    const steps = Array.from({ length: 11 }, (_, i) => `${i + 1}. \`src/f${i}.ts\``).join('\n');
    const found = staleNames(parseTraces(doc(steps)), () => '');
    expect(found).toContain('trace "demo" spans 11 files (at most 10)');
    expect(staleNames(parseTraces(doc('1. `src/gone.ts`: `start`')), read)).toContain(
      'trace "demo" line 4: src/gone.ts does not exist',
    );
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
