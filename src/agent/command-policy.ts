import { posix } from 'node:path';
import { commandName, effectiveCommand, hasShortFlag, operands } from './command-words.ts';
import type { EffectiveCommand } from './command-words.ts';
import { publishingTool } from './publish-commands.ts';
import { parseShell } from './shell-parser.ts';
import type { Pipeline, SimpleCommand } from './shell-parser.ts';

export type CommandDecision = { allowed: true } | { allowed: false; reason: string };

/** The classes of refusal a person's approval lifts for one command. */
export type LiftableClass = 'publish' | 'force-push' | 'pipe-to-shell';

/** What a person approved for this one command: its refusals of these classes do not apply. */
export type PolicyOptions = { lifted?: ReadonlySet<LiftableClass> | undefined };

/** Decides whether the agent may run a shell command. Pure; the reason is shown to the model. */
export type CommandPolicy = (command: string, options?: PolicyOptions) => CommandDecision;

/**
 * Refuses high-risk commands before they reach the sandbox. The sandbox is the real boundary; this
 * catches the moves a coding agent must never make (wiping disks, piping downloads into a shell,
 * pushing or publishing) early, with a reason the model can act on. It reads the command the way sh
 * would split it, so `echo "git push"` passes and `cd x && sh -c 'git push'` does not.
 */
export const checkCommand: CommandPolicy = (command, options = {}) => {
  const reason = checkScript(command, 0, options.lifted ?? new Set());
  return reason === undefined ? { allowed: true } : { allowed: false, reason };
};

const MAX_NESTING = 6;

type Lifted = ReadonlySet<LiftableClass>;

const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'busybox']);
const INTERPRETERS = new Set(['python', 'python2', 'python3', 'perl', 'ruby', 'node', 'php', 'deno', 'bun']);
const DOWNLOADERS = new Set(['curl', 'wget', 'fetch', 'aria2c', 'http', 'https', 'lwp-request', 'GET']);
const POWER = new Set(['shutdown', 'reboot', 'halt', 'poweroff', 'telinit']);
const FILESYSTEM_MAKERS = /^(mkfs(\..+)?|mke2fs|mkswap|wipefs|mkfs_\w+)$/;
const SAFE_DEVICES = /^\/dev\/(null|zero|stdout|stderr|stdin|tty|fd\/\d+|random|urandom)$/;

const REASONS = {
  gitPush:
    'git push is not available to the agent: the harness reviews, commits and pushes the session branch and opens the pull request after the checks pass. Leave your work in the workspace (local commits are fine) and say you are done.',
  forcePush:
    'Force-pushing (--force, -f, --force-with-lease, +refspec) rewrites shared history and is never allowed. Pushing at all is done by the harness, not the agent: leave your work in the workspace.',
  publish:
    'Publishing packages, images and releases (npm/yarn/pnpm publish, twine upload, cargo publish, gem push, docker push, mvn deploy, gradle publish, dotnet nuget push, gh release create, …) releases code to the world and is not part of a coding session unless the operator allows it. Make the change in the repository; releases are up to the maintainers.',
  sudo: 'sudo/doas/su are refused: the sandbox runs unprivileged and needs no root. Run the command without it, or install tools into the workspace (for example with npm or pip --user).',
  pipeToShell:
    'Running a downloaded script directly (curl|sh, wget -O- | bash, bash <(curl …)) is refused: it executes unreviewed code. Download the file, inspect it, then run it, or use the package manager.',
  forkBomb: 'This is a fork bomb; it would exhaust the machine and is refused.',
  power: 'Shutting down or rebooting the machine is refused; nothing in a coding task needs it.',
  mkfs: 'Creating or wiping filesystems (mkfs, mkswap, wipefs) destroys disks and is refused.',
  device: 'Writing to a raw device under /dev destroys disks and is refused. Write to a file in the workspace instead.',
  gitGlobalConfig:
    'Changing global or system git configuration (git config --global/--system) is refused: it reaches beyond this workspace. Use `git config` without --global to set it for this repository only.',
  credentials:
    'Configuring git credentials or credential helpers is refused: the sandbox holds no credentials, and the harness does all authenticated git work.',
  nested: 'The command nests shells or substitutions too deeply to check; simplify it.',
} as const;

function checkScript(source: string, depth: number, lifted: Lifted): string | undefined {
  if (depth > MAX_NESTING) return REASONS.nested;
  if (isForkBomb(source)) return REASONS.forkBomb;
  for (const pipeline of parseShell(source)) {
    const reason = checkPipeline(pipeline, depth, lifted);
    if (reason) return reason;
  }
  return undefined;
}

function isForkBomb(source: string): boolean {
  const compact = source.replace(/\s+/g, '');
  const definition = /([\w:.-]+)\(\)\{(.*?)\}/g;
  for (const match of compact.matchAll(definition)) {
    const name = match[1]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (new RegExp(`(^|[;|&])${name}[|&]${name}([;&|]|$)`).test(match[2]!)) return true;
  }
  return false;
}

function checkPipeline(pipeline: Pipeline, depth: number, lifted: Lifted): string | undefined {
  const commands = pipeline.map((simple) => ({ simple, effective: effectiveCommand(simple) }));
  // A downloader feeding, at any later stage, a shell that reads its script from stdin.
  const firstDownload = commands.findIndex((c) => c.effective && DOWNLOADERS.has(c.effective.name));
  if (firstDownload !== -1) {
    const later = commands.slice(firstDownload + 1);
    if (!lifted.has('pipe-to-shell') && later.some((c) => c.effective && readsScriptFromStdin(c.effective)))
      return REASONS.pipeToShell;
  }
  for (const { simple, effective } of commands) {
    const reason = checkSimple(simple, effective, depth, lifted);
    if (reason) return reason;
  }
  return undefined;
}

function readsScriptFromStdin(command: EffectiveCommand): boolean {
  const { name, args } = command;
  const interpreter = SHELLS.has(name) || INTERPRETERS.has(name) || /^python\d(\.\d+)?$/.test(name);
  if (!interpreter) return false;
  if (args.includes('-') || (SHELLS.has(name) && hasShortFlag(args, 's'))) return true;
  if (SHELLS.has(name) && hasShortFlag(args, 'c')) return false;
  if (!SHELLS.has(name) && args.some((a) => a === '-c' || a === '-e' || a === '-m')) return false;
  return operands(args).length === 0;
}

function checkSimple(
  simple: SimpleCommand,
  command: EffectiveCommand | undefined,
  depth: number,
  lifted: Lifted,
): string | undefined {
  for (const word of [...simple.words, ...simple.redirects.map((r) => r.target)]) {
    for (const substitution of word.substitutions) {
      const reason = checkScript(substitution, depth + 1, lifted);
      if (reason) return reason;
    }
  }
  if (simple.redirects.some((r) => r.op.includes('>') && isDevicePath(r.target.text))) return REASONS.device;
  if (!command) return undefined;
  if (command.elevated) return REASONS.sudo;
  return checkCommandRules(command, depth, lifted);
}

function checkCommandRules(command: EffectiveCommand, depth: number, lifted: Lifted): string | undefined {
  const { name, args } = command;
  if (name === 'su') return REASONS.sudo;
  if (SHELLS.has(name) || INTERPRETERS.has(name) || name === 'eval' || name === 'source' || name === '.') {
    if (!lifted.has('pipe-to-shell') && command.words.some((w) => w.substitutions.some(containsDownload)))
      return REASONS.pipeToShell;
  }
  if (name === 'eval') return checkScript(args.join(' '), depth + 1, lifted);
  if (SHELLS.has(name)) {
    const flagIndex = args.findIndex((a) => /^-[A-Za-z]*c[A-Za-z]*$/.test(a));
    const script = flagIndex === -1 ? undefined : args[flagIndex + 1];
    return script === undefined ? undefined : checkScript(script, depth + 1, lifted);
  }
  if (name === 'watch') return checkScript(watchedCommand(args), depth + 1, lifted);
  if (name === 'rm') return checkRecursive(args, 'rR', '--recursive', 'delete');
  if (name === 'chmod' || name === 'chown' || name === 'chgrp')
    return checkRecursive(args, 'R', '--recursive', 'change permissions of');
  if (name === 'find') return checkFind(args);
  if (name === 'git') return checkGit(args, lifted);
  if (!lifted.has('publish') && publishingTool(command)) return REASONS.publish;
  if (FILESYSTEM_MAKERS.test(name)) return REASONS.mkfs;
  if (POWER.has(name)) return REASONS.power;
  if (name === 'init' && /^[06]$/.test(args[0] ?? '')) return REASONS.power;
  if (name === 'systemctl' && args.some((a) => /^(reboot|poweroff|halt|kexec|suspend|hibernate)$/.test(a)))
    return REASONS.power;
  if (name === 'dd' && args.some((a) => a.startsWith('of=') && isDevicePath(a.slice(3)))) return REASONS.device;
  if ((name === 'tee' || name === 'cp' || name === 'shred' || name === 'mv') && operands(args).some(isDevicePath))
    return REASONS.device;
  return undefined;
}

function containsDownload(script: string): boolean {
  return parseShell(script).some((pipeline) =>
    pipeline.some((simple) => {
      const command = effectiveCommand(simple);
      return command !== undefined && DOWNLOADERS.has(command.name);
    }),
  );
}

function checkRecursive(args: string[], letters: string, long: string, verb: string): string | undefined {
  if (args.includes('--no-preserve-root')) {
    return `--no-preserve-root removes the guard against deleting / and is refused.`;
  }
  if (!hasShortFlag(args, letters) && !args.includes(long)) return undefined;
  for (const target of operands(args)) {
    const danger = dangerousTarget(target);
    if (danger)
      return `Refused: this would recursively ${verb} ${danger} (${target}). Only touch paths inside the workspace, for example ./build or node_modules.`;
  }
  return undefined;
}

function checkFind(args: string[]): string | undefined {
  const destructive =
    args.includes('-delete') ||
    args.some((a, i) => /^-(exec|execdir|ok)$/.test(a) && commandName(args[i + 1] ?? '') === 'rm');
  if (!destructive) return undefined;
  const starts = args.slice(
    0,
    args.findIndex((a) => /^[-(!]/.test(a)),
  );
  for (const start of starts) {
    const danger = dangerousTarget(start);
    if (danger)
      return `Refused: this find would delete files across ${danger} (${start}). Only delete inside the workspace.`;
  }
  return undefined;
}

/** Top-level directories whose whole tree belongs to the system. */
const SYSTEM_TREES = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/root',
  '/sbin',
  '/sys',
  '/usr',
  '/var',
];
/** Directories that must not go as a whole, though things inside them may. */
const SYSTEM_ROOTS = ['/home', '/opt', '/srv', '/mnt', '/media', '/run', '/tmp', '/snap', '/nix'];

/** Describes why removing `target` recursively would be a disaster, or undefined when it is fine. */
function dangerousTarget(target: string): string | undefined {
  if (/^(~|\$HOME|\$\{HOME\})(\/(\.?\*|\.)?)?\/?$/.test(target)) return 'the home directory';
  if (!target.startsWith('/')) return undefined;
  let path = posix.normalize(target).replace(/\/+$/, '');
  if (/\/\.?\*$/.test(path)) path = path.replace(/\/\.?\*$/, '');
  if (path === '' || path === '/' || path === '/.') return 'the whole filesystem';
  if (SYSTEM_TREES.some((dir) => path === dir || path.startsWith(`${dir}/`))) return 'a system directory';
  if (SYSTEM_ROOTS.includes(path)) return 'a system directory';
  if (/^\/home\/[^/]+$/.test(path)) return 'a home directory';
  return undefined;
}

function isDevicePath(path: string): boolean {
  const normalized = posix.normalize(path);
  return normalized.startsWith('/dev/') && !SAFE_DEVICES.test(normalized);
}

/** Git options that come before the subcommand and take a separate value. */
const GIT_VALUE_OPTIONS = new Set([
  '-C',
  '-c',
  '--git-dir',
  '--work-tree',
  '--namespace',
  '--config-env',
  '--super-prefix',
  '--exec-path',
]);

function checkGit(args: string[], lifted: Lifted): string | undefined {
  let i = 0;
  const configs: string[] = [];
  while (i < args.length && args[i]!.startsWith('-')) {
    const option = args[i]!;
    if (option === '-c') configs.push(args[i + 1] ?? '');
    if (option.startsWith('-c') && option.length > 2) configs.push(option.slice(2));
    i += GIT_VALUE_OPTIONS.has(option) ? 2 : 1;
  }
  for (const setting of configs) {
    if (/^credential[.=]/i.test(setting)) return REASONS.credentials;
    if (/^alias\.[^=]*=.*\bpush\b/i.test(setting)) return REASONS.gitPush;
  }
  const subcommand = args[i];
  const rest = args.slice(i + 1);
  if (subcommand === undefined) return undefined;
  if (subcommand === 'push') {
    const forced = rest.some(
      (a) =>
        a === '--force' ||
        a === '--force-with-lease' ||
        a.startsWith('--force-with-lease=') ||
        a === '--force-if-includes' ||
        /^-[A-Za-z]*f[A-Za-z]*$/.test(a) ||
        /^\+/.test(a),
    );
    if (forced && lifted.has('force-push')) return undefined;
    return forced ? REASONS.forcePush : REASONS.gitPush;
  }
  if (subcommand === 'send-pack' || subcommand === 'http-push') return REASONS.gitPush;
  if (subcommand.startsWith('credential')) return REASONS.credentials;
  if (subcommand === 'config') {
    if (rest.some((a) => a === '--global' || a === '--system')) return REASONS.gitGlobalConfig;
    if (rest.some((a) => /^credential\./i.test(a))) return REASONS.credentials;
    const key = operands(rest)[0];
    if (
      key &&
      /^alias\./i.test(key) &&
      operands(rest)
        .slice(1)
        .some((v) => /\bpush\b/.test(v))
    )
      return REASONS.gitPush;
  }
  return undefined;
}

/** `watch -n 2 cmd args` runs `cmd args` through sh -c. */
function watchedCommand(args: string[]): string {
  let i = 0;
  while (i < args.length && args[i]!.startsWith('-')) i += /^-(n|-interval)$/.test(args[i]!) ? 2 : 1;
  return args.slice(i).join(' ');
}
