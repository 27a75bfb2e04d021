#!/usr/bin/env node
/**
 * The dependency rule check run by `.ci/run`: every relative import in `src/`, `integrations/`,
 * `sandbox/`, `db/` and `web/` (type imports included) must go to the same unit or to a layer its
 * layer may import (scripts/layer-rules.ts); no file may sit outside a layer; core imports no
 * package but zod; no two files share a name (a port and its adapter are named apart:
 * `KnowledgeStore` in `knowledge-store.ts`, `PgKnowledgeStore` in `pg-knowledge-store.ts`); and
 * README.md's layer table must be the one these rules generate.
 *
 *   node scripts/check-layers.ts [--root DIR]           check; exit 1 with one line per violation
 *   node scripts/check-layers.ts [--root DIR] --write   rewrite README.md's layer table from the rules
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { checkedRoots, layers, type Layer } from './layer-rules.ts';

export type Violation = { file: string; message: string };

/** The layer and unit (a layer, or one subfolder of a `dir/*\/` layer) a repository path belongs to. */
export function unitOf(path: string, rules: readonly Layer[] = layers): { layer: Layer; unit: string } | undefined {
  for (const layer of rules) {
    for (const pattern of layer.paths) {
      if (pattern.endsWith('/*/')) {
        const base = pattern.slice(0, -2);
        const rest = path.startsWith(base) ? path.slice(base.length) : undefined;
        if (rest?.includes('/')) return { layer, unit: base + rest.slice(0, rest.indexOf('/')) };
      } else if (pattern.endsWith('/*.ts')) {
        const dir = pattern.slice(0, -4);
        if (path.startsWith(dir) && !path.slice(dir.length).includes('/')) return { layer, unit: layer.name };
      } else if (pattern.endsWith('/') ? path.startsWith(pattern) : path === pattern) {
        return { layer, unit: layer.name };
      }
    }
  }
  return undefined;
}

/** Relative and package specifiers a TypeScript file imports or re-exports, dynamic imports included. */
export function importsOf(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^;'"`]*?\sfrom\s*['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /^\s*import\s+['"]([^'"]+)['"]/gm,
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]!);
  return found;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

function sourceFiles(root: string, dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(join(root, dir));
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name.startsWith('.')) return [];
    if (statSync(join(root, path)).isDirectory()) return sourceFiles(root, path);
    return /\.(ts|tsx|mts)$/.test(name) && !/\.test\.tsx?$/.test(name) ? [path] : [];
  });
}

/** Checks the rules themselves: known layer names and no cycle among layers. */
export function ruleViolations(rules: readonly Layer[] = layers): Violation[] {
  const names = new Set(rules.map((l) => l.name));
  const out: Violation[] = [];
  for (const layer of rules) {
    for (const target of layer.mayImport)
      if (!names.has(target))
        out.push({ file: 'scripts/layer-rules.ts', message: `${layer.name} may import unknown layer ${target}` });
  }
  const visiting = new Set<string>();
  const done = new Set<string>();
  const visit = (name: string, path: string[]): void => {
    if (done.has(name)) return;
    if (visiting.has(name)) {
      out.push({ file: 'scripts/layer-rules.ts', message: `layer cycle: ${[...path, name].join(' → ')}` });
      return;
    }
    visiting.add(name);
    for (const next of rules.find((l) => l.name === name)?.mayImport ?? []) visit(next, [...path, name]);
    visiting.delete(name);
    done.add(name);
  };
  for (const layer of rules) visit(layer.name, []);
  return out;
}

/** Every import that breaks a rule, in the tree at `root`. */
export function importViolations(root: string, rules: readonly Layer[] = layers): Violation[] {
  const out: Violation[] = [];
  for (const file of checkedRoots.flatMap((dir) => sourceFiles(root, dir))) {
    const from = unitOf(file, rules);
    if (!from) {
      out.push({ file, message: 'belongs to no layer: add its folder to scripts/layer-rules.ts' });
      continue;
    }
    for (const specifier of importsOf(readFileSync(join(root, file), 'utf8'))) {
      if (specifier.startsWith('node:') || !specifier.startsWith('.')) {
        const name = specifier.startsWith('node:') ? specifier : packageName(specifier);
        if (from.layer.packages && !from.layer.packages.includes(name)) {
          out.push({
            file,
            message: `${from.layer.name} may import only ${from.layer.packages.join(', ')}, not ${name}`,
          });
        }
        continue;
      }
      const target = normalize(join(dirname(file), specifier));
      if (target.startsWith('test/') || target.startsWith('bench/') || target.startsWith('scripts/')) {
        out.push({ file, message: `imports ${target}: product code never imports tests, benches or scripts` });
        continue;
      }
      const to = unitOf(target, rules);
      if (!to) {
        out.push({ file, message: `imports ${target}, which belongs to no layer` });
        continue;
      }
      if (to.unit === from.unit) continue;
      if (to.layer === from.layer) {
        out.push({
          file,
          message: `imports ${target}: ${from.unit} and ${to.unit} are siblings and must not import each other (share through a lower layer)`,
        });
      } else if (!from.layer.mayImport.includes(to.layer.name)) {
        out.push({
          file,
          message: `imports ${target}: ${from.layer.name} may import ${from.layer.mayImport.join(', ') || 'no other layer'}, not ${to.layer.name}`,
        });
      }
    }
  }
  return out;
}

/** Files whose name another file has too: a reader who opens `x.ts` should find one. */
export function nameViolations(root: string): Violation[] {
  const byName = new Map<string, string[]>();
  for (const file of checkedRoots.flatMap((dir) => sourceFiles(root, dir))) {
    const name = file.slice(file.lastIndexOf('/') + 1);
    byName.set(name, [...(byName.get(name) ?? []), file]);
  }
  return [...byName.values()]
    .filter((files) => files.length > 1)
    .flatMap(([first, ...others]) =>
      others.map((file) => ({ file, message: `has the name of ${first}: give one of them a name of its own` })),
    );
}

const tableStart =
  '<!-- layer table: generated by `node scripts/check-layers.ts --write` from scripts/layer-rules.ts -->';
const tableEnd = '<!-- end of layer table -->';

export function layerTable(rules: readonly Layer[] = layers): string {
  const rows = rules.map((l) => {
    const folders = l.paths.map((p) => `\`${p.replace(/\*\/$/, '<name>/')}\``).join(', ');
    const may = l.mayImport.length ? l.mayImport.join(', ') : 'nothing';
    return `| ${folders} | ${l.name} | ${l.holds} | ${may}${l.packages ? ` (packages: ${l.packages.join(', ')})` : ''} |`;
  });
  return [tableStart, '| folder | layer | holds | may import |', '|---|---|---|---|', ...rows, tableEnd].join('\n');
}

function readmeTable(readme: string): { before: string; table: string; after: string } | undefined {
  const start = readme.indexOf(tableStart);
  const end = readme.indexOf(tableEnd);
  if (start < 0 || end < start) return undefined;
  return {
    before: readme.slice(0, start),
    table: readme.slice(start, end + tableEnd.length),
    after: readme.slice(end + tableEnd.length),
  };
}

export function readmeViolations(root: string, rules: readonly Layer[] = layers): Violation[] {
  const parts = readmeTable(readFileSync(join(root, 'README.md'), 'utf8'));
  if (!parts)
    return [{ file: 'README.md', message: 'has no generated layer table: run node scripts/check-layers.ts --write' }];
  return parts.table === layerTable(rules)
    ? []
    : [
        {
          file: 'README.md',
          message: 'layer table differs from scripts/layer-rules.ts: run node scripts/check-layers.ts --write',
        },
      ];
}

function main(argv: string[]): number {
  const rootIndex = argv.indexOf('--root');
  const root = rootIndex >= 0 ? argv[rootIndex + 1]! : join(dirname(fileURLToPath(import.meta.url)), '..');
  if (argv.includes('--write')) {
    const path = join(root, 'README.md');
    const parts = readmeTable(readFileSync(path, 'utf8'));
    if (!parts) {
      process.stderr.write(`README.md has no markers; add the two lines:\n${tableStart}\n${tableEnd}\n`);
      return 1;
    }
    writeFileSync(path, parts.before + layerTable() + parts.after);
  }
  const violations = [
    ...ruleViolations(),
    ...importViolations(root),
    ...nameViolations(root),
    ...readmeViolations(root),
  ];
  for (const v of violations)
    process.stderr.write(`${relative(process.cwd(), join(root, v.file)) || v.file}: ${v.message}\n`);
  process.stdout.write(
    violations.length
      ? `layers: ${violations.length} violation(s)\n`
      : 'layers: every import follows the layer rules\n',
  );
  return violations.length ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href)
  process.exitCode = main(process.argv.slice(2));
