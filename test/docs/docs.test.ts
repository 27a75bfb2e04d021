import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createDefaultTools } from '../../src/agent/default-tools.ts';
import { envSchema } from '../../src/config.ts';

/**
 * The README is a guide and docs/ holds the reference: these keep the two honest. Every variable
 * Patchbay reads is described exactly once, every relative link lands, and the scripted model's
 * tools are the ones the agent has.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const sourceFolders = ['src', 'integrations', 'db', 'sandbox', 'bin'];
/** Read from the environment but not Patchbay's settings: the system's own. */
const notSettings = new Set(['PATH']);

function filesUnder(dir: string, keep: (path: string) => boolean): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return filesUnder(path, keep);
    return keep(path) ? [path] : [];
  });
}

const documents = [
  'README.md',
  ...filesUnder(join(root, 'docs'), (p) => p.endsWith('.md')).map((p) => relative(root, p)),
];
const text = (file: string) => readFileSync(join(root, file), 'utf8');

/** Markdown without fenced code blocks and inline code spans, where a link is only text. */
function withoutCode(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The variables named in the environment reads of the source: `process.env.X`, `env.X`, `env['X']`. */
function variablesReadBySource(): Set<string> {
  const read = new Set<string>(Object.keys(envSchema.shape));
  const files = sourceFolders.flatMap((folder) =>
    filesUnder(join(root, folder), (p) => /\.(ts|js)$/.test(p) && !p.endsWith('.test.ts')),
  );
  for (const file of files) {
    for (const match of readFileSync(file, 'utf8').matchAll(
      /\benv(?:\.([A-Z][A-Z0-9_]+)\b|\[\s*['"]([A-Z][A-Z0-9_]+)['"]\s*\])/g,
    )) {
      const name = match[1] ?? match[2]!;
      if (!notSettings.has(name)) read.add(name);
    }
  }
  return read;
}

/** Where each variable is defined: a row of a table headed `| variable |`, whose first cell names it in backticks. */
function definitions(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of documents) {
    let header: string | undefined;
    text(file)
      .split('\n')
      .forEach((line, index) => {
        const firstCell = /^\|([^|]*)\|/.exec(line)?.[1];
        header = firstCell === undefined ? undefined : (header ?? firstCell.trim());
        if (!firstCell || header !== 'variable') return;
        for (const match of firstCell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) {
          found.set(match[1]!, [...(found.get(match[1]!) ?? []), `${file}:${index + 1}`]);
        }
      });
  }
  return found;
}

/** GitHub's anchors for a document's headings: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = match[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** Relative links of a document that point at no file, or at no heading of their file. */
function brokenLinks(file: string): string[] {
  const broken: string[] = [];
  for (const match of withoutCode(text(file)).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path, anchor] = target.split('#') as [string, string | undefined];
    const resolved = path === '' ? join(root, file) : resolve(dirname(join(root, file)), path);
    if (!existsSync(resolved)) {
      broken.push(`${file}: ${target} (no such file)`);
    } else if (
      anchor !== undefined &&
      (!resolved.endsWith('.md') || !anchors(readFileSync(resolved, 'utf8')).has(anchor))
    ) {
      broken.push(`${file}: ${target} (no such heading)`);
    }
  }
  return broken;
}

describe('the README and docs/', () => {
  it('keep the README a guide of at most 250 lines', () => {
    expect(text('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });

  it("give CI's test command as the README's second command", () => {
    const ci = text('.ci/run')
      .split('\n')
      .find((line) => /^[^#].*\bnpm test\b/.test(line));
    const commands = /^```sh\n([\s\S]*?)^```/m
      .exec(text('README.md'))![1]!
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, ''));
    expect(ci).toBeDefined();
    expect(commands[1]).toBe(ci);
  });

  it('describe every environment variable Patchbay reads, and each exactly once', () => {
    const defined = definitions();
    const read = variablesReadBySource();
    expect([...read].filter((name) => !defined.has(name)).sort(), 'read but described in no table row').toEqual([]);
    expect(
      [...defined].filter(([, places]) => places.length > 1).map(([name, places]) => `${name}: ${places.join(', ')}`),
      'described more than once',
    ).toEqual([]);
    expect([...defined.keys()].filter((name) => !read.has(name)).sort(), 'described but read nowhere').toEqual([]);
  });

  it('have no relative link to a missing file or heading', () => {
    expect(documents.flatMap(brokenLinks)).toEqual([]);
  });

  it("list the scripted model's tools as the agent has them, with their inputs", () => {
    const configuration = text('docs/configuration.md');
    const section = configuration.slice(
      configuration.indexOf('## Scripted model'),
      configuration.indexOf('\n## ', configuration.indexOf('## Scripted model') + 1),
    );
    const rows = new Map(
      [...section.matchAll(/^\| `([a-z_]+)` \| ([^|]*) \|/gm)].map((match) => [match[1]!, match[2]!]),
    );
    for (const tool of createDefaultTools()) {
      expect(rows.has(tool.name), `tool ${tool.name} is not in docs/configuration.md`).toBe(true);
      const input = tool.inputSchema instanceof z.ZodObject ? Object.keys(tool.inputSchema.shape) : [];
      for (const key of input)
        expect(rows.get(tool.name), `${tool.name}'s input ${key}`).toMatch(new RegExp(`\`${key}\\??\``));
    }
    expect(
      [...rows.keys()].filter((name) => !createDefaultTools().some((tool) => tool.name === name)),
      'documented tools the agent does not have',
    ).toEqual([]);
  });
});
