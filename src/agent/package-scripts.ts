import { operands } from './command-words.ts';
import type { EffectiveCommand } from './command-words.ts';

/** Lifecycle scripts `npm install`/`npm ci` run from the root package.json. */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare'];
/** npm's own commands that run the script of the same name. */
const DIRECT = new Set(['test', 't', 'tst', 'start', 'stop', 'restart']);
const INSTALLS = new Set(['install', 'i', 'ci', 'clean-install', 'add']);

/**
 * The package.json scripts a package manager command runs, with their pre and post scripts (`npm
 * test`, `npm run build`, `yarn lint`, `pnpm run check`, `npm ci`'s lifecycle scripts), or
 * undefined when it runs none. The workspace's scripts are the agent's to change, so what they say
 * is what such a command does.
 */
export function packageScripts(command: EffectiveCommand): string[] | undefined {
  const { name, args } = command;
  if (!['npm', 'pnpm', 'yarn', 'bun'].includes(name)) return undefined;
  const words = operands(args);
  const verb = words[0];
  if (verb === undefined) return name === 'yarn' ? INSTALL_SCRIPTS : undefined;
  if (INSTALLS.has(verb) && (words.length === 1 || verb === 'ci')) return INSTALL_SCRIPTS;
  if (verb === 'run' || verb === 'run-script') return words[1] === undefined ? undefined : withHooks(words[1]);
  if (DIRECT.has(verb)) return withHooks(verb.startsWith('t') ? 'test' : verb);
  // `yarn build`, `pnpm lint`: a word that is no command of theirs names a script.
  if ((name === 'yarn' || name === 'pnpm') && /^[\w:.-]+$/.test(verb) && !PM_COMMANDS.has(verb)) return withHooks(verb);
  return undefined;
}

/** A script's text in a package.json, or undefined. */
export function scriptText(manifest: string | undefined, script: string): string | undefined {
  if (manifest === undefined) return undefined;
  try {
    const scripts = (JSON.parse(manifest) as { scripts?: Record<string, unknown> }).scripts;
    const text = scripts?.[script];
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}

function withHooks(script: string): string[] {
  return [`pre${script}`, script, `post${script}`];
}

/** yarn and pnpm commands that are not scripts (`yarn add`, `pnpm exec`). */
const PM_COMMANDS = new Set([
  'add',
  'audit',
  'bin',
  'cache',
  'config',
  'create',
  'dedupe',
  'dlx',
  'exec',
  'help',
  'import',
  'info',
  'init',
  'install',
  'link',
  'list',
  'ls',
  'npm',
  'outdated',
  'pack',
  'publish',
  'rebuild',
  'remove',
  'root',
  'store',
  'unlink',
  'up',
  'update',
  'upgrade',
  'version',
  'why',
  'workspace',
  'workspaces',
]);
