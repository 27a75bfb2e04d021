import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The test tiers, decided from what a test file brings in (itself and the test helpers and fakes it
 * imports, followed through `test/`), so a new file lands in a tier without being listed anywhere:
 * - `e2e`: starts the whole application (`startTestPatchbay`, `startPatchbay`, a `patchbay` process)
 *   or drives Chromium;
 * - `integration`: starts processes or servers: git (anything under `src/git/`), a sandbox, a child
 *   process, a loopback fake of an external service;
 * - `unit`: the rest: pure code and stores against the run's PostgreSQL.
 */
export type Tier = 'unit' | 'integration' | 'e2e';

const e2eModules = [/^src\/main\.ts$/, /^src\/cli\.ts$/, /^test\/helpers\/(patchbay-fixture|server-process)\.ts$/];
const e2ePackages = ['playwright-core'];
const integrationModules = [/^src\/git\//, /^sandbox\/(index|local-[\w-]+)\.ts$/, /^test\/fakes\/loopback\.ts$/];
const integrationPackages = ['node:child_process', 'child_process'];

/** Imports and re-exports that load a module at run time: `import type` and `export type` load nothing. */
const importPattern = /(?:import|export)(?!\s+type\s)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/**
 * The tier of the test file at `file` (absolute), `root` being the repository. `read` gives a
 * file's imports; the default reads it every time, `testTiers` reads each file once for all.
 */
export function testTier(root: string, file: string, read: (file: string) => string[] = importsOf): Tier {
  let tier: Tier = 'unit';
  const seen = new Set<string>();
  const pending = [file];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (seen.has(next)) continue;
    seen.add(next);
    for (const specifier of read(next)) {
      if (!specifier.startsWith('.')) {
        if (e2ePackages.includes(specifier)) return 'e2e';
        if (integrationPackages.includes(specifier)) tier = 'integration';
        continue;
      }
      const target = resolve(dirname(next), specifier);
      const path = relative(root, target);
      if (e2eModules.some((pattern) => pattern.test(path))) return 'e2e';
      if (integrationModules.some((pattern) => pattern.test(path))) tier = 'integration';
      if (path.startsWith('test/')) pending.push(target);
    }
  }
  return tier;
}

/** The test files of `root` by tier, relative to `root`: every file classified once, helpers read once. */
export function testTiers(root: string): Record<Tier, string[]> {
  const imports = new Map<string, string[]>();
  const read = (file: string) => imports.get(file) ?? imports.set(file, importsOf(file)).get(file)!;
  const tiers: Record<Tier, string[]> = { unit: [], integration: [], e2e: [] };
  for (const file of testFilesUnder(root)) tiers[testTier(root, join(root, file), read)].push(file);
  return tiers;
}

/** Where test files live: the folders named here, every `*.test.ts` below them. */
export const testFolders = ['test', 'src', 'integrations', 'sandbox', 'db'];

function testFilesUnder(root: string): string[] {
  return testFolders.flatMap((folder) =>
    readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.test.ts') && !file.split('/').includes('node_modules'))
      .map((file) => join(folder, file)),
  );
}

function importsOf(file: string): string[] {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return [...source.matchAll(importPattern)].map((match) => match[1] ?? match[2] ?? '');
}
