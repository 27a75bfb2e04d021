import type { KnowledgeDocument, KnownCommand } from './knowledge-document.ts';
import { workflowChecks } from './workflow-checks.ts';

/** Files extraction reads, by exact path (case-insensitive) or by prefix. */
export const knowledgeFiles = [
  'AGENTS.md',
  'CLAUDE.md',
  '.github/copilot-instructions.md',
  'CONTRIBUTING.md',
  '.github/CONTRIBUTING.md',
  'README.md',
  'package.json',
  'package-lock.json',
  'pnpm-lock.yaml',
  'yarn.lock',
  'Makefile',
  'pyproject.toml',
  'requirements.txt',
  'Cargo.toml',
  'go.mod',
  '.github/pull_request_template.md',
  'PULL_REQUEST_TEMPLATE.md',
  'docs/pull_request_template.md',
];
export const knowledgePrefixes = ['.github/workflows/'];

export function wantsFile(path: string): boolean {
  const lower = path.toLowerCase();
  return (
    knowledgeFiles.some((f) => f.toLowerCase() === lower) ||
    knowledgePrefixes.some((p) => lower.startsWith(p) && /\.ya?ml$/.test(lower))
  );
}

const excerptChars = 3000;
const checkNames = ['test', 'lint', 'typecheck', 'build'] as const;

type RepoFile = { path: string; text: string };
/** A file of the repository by name, case-insensitive. */
type FileNamed = (name: string) => RepoFile | undefined;
/** The commands found so far; the first found for a name or a command line wins. */
type FoundCommands = { setup: KnownCommand[]; checks: KnownCommand[] };

/**
 * Deterministic extraction: every command in the document is read from a file in the repository.
 * `files` maps repo paths to their contents (only the ones `wantsFile` chose).
 */
export function extractKnowledge(files: ReadonlyMap<string, string>): KnowledgeDocument {
  const get: FileNamed = (name) => {
    for (const [path, text] of files) if (path.toLowerCase() === name.toLowerCase()) return { path, text };
    return undefined;
  };
  const found: FoundCommands = { setup: [], checks: [] };
  packageCommands(found, get);
  toolchainCommands(found, get);
  // What the project's CI runs on its pull requests and pushes (never its deploy, release or
  // publish steps), used for names nothing else provided.
  for (const [path, text] of [...files].filter(([p]) => p.toLowerCase().startsWith('.github/workflows/')).sort()) {
    for (const { name, command } of workflowChecks(text))
      add(name === 'install' ? found.setup : found.checks, { name, command, source: path });
  }
  return {
    setup: found.setup,
    checks: found.checks,
    conventions: conventionsOf(get),
    instructions: instructionsOf(get),
    sources: [...files.keys()].sort(),
  };
}

function add(list: KnownCommand[], c: KnownCommand): void {
  if (!list.some((x) => x.command === c.command || x.name === c.name)) list.push(c);
}

/** package.json: the install its lockfile calls for, and the scripts named like checks. */
function packageCommands({ setup, checks }: FoundCommands, get: FileNamed): void {
  const pkg = get('package.json');
  if (!pkg) return;
  let parsed: { scripts?: Record<string, string>; dependencies?: object; devDependencies?: object } | undefined;
  try {
    parsed = JSON.parse(pkg.text);
  } catch {
    parsed = undefined;
  }
  if (!parsed) return;
  const hasDeps = Object.keys(parsed.dependencies ?? {}).length + Object.keys(parsed.devDependencies ?? {}).length > 0;
  if (hasDeps) {
    const install = get('pnpm-lock.yaml')
      ? 'pnpm install --frozen-lockfile'
      : get('yarn.lock')
        ? 'yarn install --frozen-lockfile'
        : get('package-lock.json')
          ? 'npm ci'
          : 'npm install';
    add(setup, { name: 'install', command: install, source: pkg.path });
  }
  const scripts = parsed.scripts ?? {};
  for (const name of checkNames) {
    const script = scripts[name] ?? (name === 'typecheck' ? (scripts['type-check'] ?? scripts.tsc) : undefined);
    if (!script || /no test specified/.test(script)) continue;
    const scriptName = scripts[name]
      ? name
      : name === 'typecheck'
        ? scripts['type-check']
          ? 'type-check'
          : 'tsc'
        : name;
    add(checks, {
      name,
      command: scriptName === 'test' ? 'npm test' : `npm run ${scriptName}`,
      source: `${pkg.path} scripts.${scriptName}`,
    });
  }
}

/** Make targets, Go, Cargo and Python projects. */
function toolchainCommands({ setup, checks }: FoundCommands, get: FileNamed): void {
  const make = get('Makefile');
  if (make) {
    const targets = new Set([...make.text.matchAll(/^([A-Za-z][\w-]*)\s*:(?!=)/gm)].map((m) => m[1]!));
    for (const name of checkNames)
      if (targets.has(name)) add(checks, { name, command: `make ${name}`, source: make.path });
    if (targets.has('check')) add(checks, { name: 'check', command: 'make check', source: make.path });
  }
  const go = get('go.mod');
  if (go) {
    add(checks, { name: 'build', command: 'go build ./...', source: go.path });
    add(checks, { name: 'test', command: 'go test ./...', source: go.path });
    add(checks, { name: 'lint', command: 'go vet ./...', source: go.path });
  }
  const cargo = get('Cargo.toml');
  if (cargo) {
    add(checks, { name: 'build', command: 'cargo build', source: cargo.path });
    add(checks, { name: 'test', command: 'cargo test', source: cargo.path });
  }
  const pyproject = get('pyproject.toml');
  const requirements = get('requirements.txt');
  if (requirements)
    add(setup, { name: 'install', command: 'pip install -r requirements.txt', source: requirements.path });
  else if (pyproject && /^\[(project|tool\.poetry)\]/m.test(pyproject.text))
    add(setup, { name: 'install', command: 'pip install -e .', source: pyproject.path });
  if (pyproject && /pytest/.test(pyproject.text))
    add(checks, { name: 'test', command: 'pytest', source: pyproject.path });
}

/** The pull request template and CONTRIBUTING's sections on branches, commits and style. */
function conventionsOf(get: FileNamed): string[] {
  const conventions: string[] = [];
  const template =
    get('.github/pull_request_template.md') ?? get('PULL_REQUEST_TEMPLATE.md') ?? get('docs/pull_request_template.md');
  if (template) conventions.push(`Pull request template (${template.path}):\n${clip(template.text)}`);
  const contributing = get('CONTRIBUTING.md') ?? get('.github/CONTRIBUTING.md');
  if (contributing) {
    const sections = sectionsMatching(contributing.text, /branch|commit|pull request|pr\b|style/i);
    if (sections) conventions.push(`From ${contributing.path}:\n${clip(sections)}`);
  }
  return conventions;
}

/** Agent instruction files, and the development sections of CONTRIBUTING and README. */
function instructionsOf(get: FileNamed): { source: string; text: string }[] {
  const instructions: { source: string; text: string }[] = [];
  for (const name of ['AGENTS.md', 'CLAUDE.md', '.github/copilot-instructions.md']) {
    const file = get(name);
    if (file) instructions.push({ source: file.path, text: clip(file.text) });
  }
  const contributing = get('CONTRIBUTING.md') ?? get('.github/CONTRIBUTING.md');
  if (contributing) {
    const dev = sectionsMatching(contributing.text, /test|develop|setup|install|build|lint/i);
    if (dev) instructions.push({ source: contributing.path, text: clip(dev) });
  }
  const readme = get('README.md');
  if (readme) {
    const dev = sectionsMatching(readme.text, /test|develop|contribut|setup|install|build/i);
    if (dev) instructions.push({ source: readme.path, text: clip(dev) });
  }
  return instructions;
}

function sectionsMatching(markdown: string, heading: RegExp): string {
  const parts = markdown.split(/^(?=#{1,4}\s)/m);
  return parts
    .filter((p) => /^#{1,4}\s/.test(p) && heading.test(p.split('\n')[0]!))
    .join('\n')
    .trim();
}

function clip(text: string): string {
  const t = text.trim();
  return t.length <= excerptChars ? t : `${t.slice(0, excerptChars)}\n[…]`;
}
