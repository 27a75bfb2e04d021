import type { EffectiveCommand } from './command-words.ts';

/**
 * A command that fetches a package and runs it (`npx x`, `pnpm dlx x`, `uvx x`): the packages it
 * may fetch, the command it then runs (its words), and a shell script it runs (`npx -c '…'`).
 */
export type PackageRun = {
  runner: string;
  ecosystem: 'npm' | 'python';
  packages: string[];
  /** The bin it runs, when that can be a bin already installed in the workspace (npx, npm exec, bunx). */
  localBin: string | undefined;
  inner: string[];
  script: string | undefined;
};

type Parsed = { packages: string[]; rest: string[]; script: string | undefined };

/** Options of the runners that take a value, and the ones among them naming a package. */
const VALUE_OPTIONS = new Set(['-p', '--package', '-c', '--call', '--from', '--with', '--python', '--spec', '--cwd']);
const PACKAGE_OPTIONS = new Set(['-p', '--package', '--from', '--spec']);

/** The package run a command is, or undefined when it runs nothing fetched. */
export function packageRun(command: EffectiveCommand): PackageRun | undefined {
  const { name, args } = command;
  const npm = (runner: string, after: string[], localBin: boolean): PackageRun =>
    described(runner, 'npm', parseRunner(after), localBin);
  if (name === 'npx' || name === 'bunx') return npm(name, args, true);
  if (name === 'pnpx') return npm(name, args, false);
  if (name === 'npm') {
    const verb = args.findIndex((a) => a === 'exec' || a === 'x');
    return verb === -1 || args.slice(0, verb).some((a) => !a.startsWith('-'))
      ? undefined
      : npm('npm exec', args.slice(verb + 1), true);
  }
  if ((name === 'pnpm' || name === 'yarn') && args[0] === 'dlx') return npm(`${name} dlx`, args.slice(1), false);
  if (name === 'bun' && args[0] === 'x') return npm('bun x', args.slice(1), true);
  if (name === 'uvx') return described('uvx', 'python', parseRunner(args), false);
  if (name === 'uv' && args[0] === 'tool' && args[1] === 'run')
    return described('uv tool run', 'python', parseRunner(args.slice(2)), false);
  if (name === 'pipx' && args[0] === 'run') return described('pipx run', 'python', parseRunner(args.slice(1)), false);
  return undefined;
}

function described(runner: string, ecosystem: PackageRun['ecosystem'], parsed: Parsed, localBin: boolean): PackageRun {
  const bin = parsed.rest[0];
  // With --package/--from, the first word is a bin of those packages; otherwise it names the package too.
  const packages = parsed.packages.length > 0 ? parsed.packages : bin === undefined ? [] : [bin];
  return {
    runner,
    ecosystem,
    packages,
    localBin: localBin && parsed.packages.length === 0 ? bin : undefined,
    inner: parsed.rest,
    script: parsed.script,
  };
}

/** The runner's own options, then the command it runs (its options are the command's). */
function parseRunner(args: string[]): Parsed {
  const packages: string[] = [];
  let script: string | undefined;
  let i = 0;
  while (i < args.length && args[i]!.startsWith('-')) {
    const arg = args[i]!;
    if (arg === '--') {
      i++;
      break;
    }
    const eq = arg.indexOf('=');
    const option = eq === -1 ? arg : arg.slice(0, eq);
    const value = eq === -1 ? args[i + 1] : arg.slice(eq + 1);
    if (PACKAGE_OPTIONS.has(option) && value !== undefined) packages.push(value);
    if ((option === '-c' || option === '--call') && value !== undefined) script = value;
    i += VALUE_OPTIONS.has(option) && eq === -1 ? 2 : 1;
  }
  return { packages, rest: args.slice(i), script };
}

/** A package spec's bare name: `@scope/x@1.2` → `@scope/x`, `black==24.1` → `black`, `ruff[extra]` → `ruff`. */
export function packageName(spec: string, ecosystem: PackageRun['ecosystem']): string | undefined {
  if (/^(\.|\/|~|[a-z+]+:)/i.test(spec)) return undefined;
  if (ecosystem === 'npm') {
    const match = /^(@[a-z0-9._~-]+\/[a-z0-9._~-]+|[a-z0-9._~-]+)(@.*)?$/i.exec(spec);
    return match?.[2] === undefined ? match?.[1] : undefined;
  }
  const match = /^([A-Za-z0-9._-]+)(\[[^\]]*\])?$/.exec(spec);
  return match?.[1];
}

/** Whether `manifest` (package.json's text) declares `name` as a dependency of any kind. */
export function npmDeclares(manifest: string, name: string): boolean {
  try {
    const json = JSON.parse(manifest) as Record<string, unknown>;
    return ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'].some((field) => {
      const deps = json[field];
      return typeof deps === 'object' && deps !== null && Object.hasOwn(deps, name);
    });
  } catch {
    return false;
  }
}

/** Whether a Python manifest (pyproject.toml, requirements.txt) names `name` as a requirement. */
export function pythonDeclares(manifest: string, name: string): boolean {
  const normalized = name.toLowerCase().replace(/[-_.]+/g, '[-_.]+');
  return new RegExp(`(^|["'\\s])${normalized}\\s*(\\[[^\\]]*\\])?\\s*(["'=<>~!;,\\s]|$)`, 'im').test(manifest);
}
