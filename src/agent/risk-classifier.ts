import { posix } from 'node:path';
import { type ApprovalRule, type ApprovalRules, defaultApprovalRules, type RiskClass } from '../core/approval-rules.ts';
import { type EffectiveCommand, effectiveCommand, hasShortFlag, operands } from './command-words.ts';
import { type Pipeline, parseShell, type SimpleCommand } from './shell-parser.ts';

export type { ApprovalRules, RiskClass } from '../core/approval-rules.ts';

/** One reason a command is held: its class, the part of the command that is risky, and why. */
export type RiskFinding = { class: RiskClass; command: string; reason: string };

export type ClassifyOptions = {
  /** The workspace's path as commands see it; deleting outside it is held. */
  workspace: string;
  /** A script file's text (a path as the command names it, relative to the workspace), or undefined when it cannot be read. */
  readScript?: ((path: string) => string | undefined) | undefined;
};

const MAX_DEPTH = 6;
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'busybox']);
const INTERPRETERS = /^(python[\d.]*|perl|ruby|node|php|deno|bun)$/;
const DOWNLOADERS = new Set(['curl', 'wget', 'fetch', 'aria2c', 'http', 'https', 'lwp-request', 'GET']);
/** Tools whose risk depends on their arguments: a variable among them cannot be read. */
const RISKY_TOOLS = new Set([
  'git',
  'npm',
  'pnpm',
  'yarn',
  'bun',
  'twine',
  'pip',
  'pip3',
  'poetry',
  'flit',
  'hatch',
  'cargo',
  'gem',
  'docker',
  'podman',
  'buildah',
  'kubectl',
  'terraform',
  'tofu',
  'helm',
  'pulumi',
  'rm',
]);

/** Everything in `command` a person should decide on, in order; empty when nothing is held. */
export function classifyRisk(command: string, options: ClassifyOptions): RiskFinding[] {
  const findings: RiskFinding[] = [];
  classifyScript(command, { ...options, findings, aliases: new Map(), depth: 0, scripts: new Set() });
  return dedupe(findings);
}

type Walk = ClassifyOptions & {
  findings: RiskFinding[];
  /** `alias name=value` definitions seen so far in this script. */
  aliases: Map<string, string>;
  depth: number;
  /** Script files already read (a script that runs itself is read once). */
  scripts: Set<string>;
};

function classifyScript(source: string, walk: Walk): void {
  if (walk.depth > MAX_DEPTH) {
    hold(walk, 'unclear', source, 'it nests shells, scripts or substitutions too deeply to read');
    return;
  }
  for (const pipeline of parseShell(source)) classifyPipeline(pipeline, walk);
}

function classifyPipeline(pipeline: Pipeline, walk: Walk): void {
  pipeline.forEach((simple, index) => {
    const effective = effectiveCommand(simple);
    if (index > 0 && effective && readsScriptFromStdin(effective)) classifyStdinScript(pipeline.slice(0, index), walk);
    classifySimple(simple, effective, walk);
  });
}

/** A shell or interpreter runs what earlier stages of its pipeline print. */
function classifyStdinScript(producers: SimpleCommand[], walk: Walk): void {
  const text = producers.map(wordsOf).join(' | ');
  const commands = producers.map(effectiveCommand);
  if (commands.some((c) => c && DOWNLOADERS.has(c.name))) {
    hold(walk, 'pipe-to-shell', text, 'it runs a downloaded script without anyone reading it');
    return;
  }
  const only = commands.length === 1 ? commands[0] : undefined;
  if (only && (only.name === 'echo' || only.name === 'printf') && !hasExpansion(only.args)) {
    nested(walk, only.args.filter((a) => !a.startsWith('-')).join(' '));
    return;
  }
  hold(walk, 'unclear', text, 'it pipes text made at run time (decoded, read from a file) into a shell');
}

function classifySimple(simple: SimpleCommand, command: EffectiveCommand | undefined, walk: Walk): void {
  for (const word of [...simple.words, ...simple.redirects.map((r) => r.target)])
    for (const substitution of word.substitutions) nested(walk, substitution);
  if (!command) return;
  const text = wordsOf(simple);
  if (command.name.includes('$')) {
    hold(walk, 'unclear', text, 'the command to run is a variable, so what it does cannot be read');
    return;
  }
  const alias = walk.aliases.get(command.name);
  if (alias !== undefined) nested(walk, [alias, ...command.args].join(' '));
  if (command.name === 'alias') {
    recordAliases(command.args, walk);
    return;
  }
  if (RISKY_TOOLS.has(command.name) && hasExpansion(command.args)) {
    hold(walk, 'unclear', text, `an argument of ${command.name} is a variable, so what it does cannot be read`);
    return;
  }
  if (runsCode(command, walk)) return;
  const rule = classifyTool(command, walk.workspace);
  if (rule) hold(walk, rule.class, text, rule.reason);
}

/** `sh -c`, `eval`, `source`, `bash script.sh`, `./script.sh`: reads what they run. True when it was such a command. */
function runsCode(command: EffectiveCommand, walk: Walk): boolean {
  const { name, args } = command;
  if (name === 'eval') return nested(walk, args.join(' '));
  if (SHELLS.has(name)) {
    const flag = args.findIndex((a) => /^-[A-Za-z]*c[A-Za-z]*$/.test(a));
    if (flag !== -1) return nested(walk, args[flag + 1] ?? '');
    const script = operands(args)[0];
    return script === undefined || script === '-' ? true : scriptFile(script, walk);
  }
  if (name === 'source' || name === '.') return args[0] === undefined ? true : scriptFile(args[0], walk);
  const invoked = command.words[0]?.text ?? name;
  if (invoked.includes('/') && !INTERPRETERS.test(name)) return scriptFile(invoked, walk);
  return false;
}

function scriptFile(path: string, walk: Walk): boolean {
  if (walk.scripts.has(path)) return true;
  walk.scripts.add(path);
  const text = walk.readScript?.(path);
  if (text === undefined) {
    // A program outside the workspace (/usr/bin/x) is not a script the agent wrote.
    if (!path.startsWith('/') || isInside(path, walk.workspace))
      hold(walk, 'unclear', path, `the script ${path} could not be read, so what it runs is not known`);
    return true;
  }
  return nested(walk, text);
}

function nested(walk: Walk, source: string): true {
  classifyScript(source, { ...walk, depth: walk.depth + 1, aliases: new Map(walk.aliases) });
  return true;
}

function recordAliases(args: string[], walk: Walk): void {
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq > 0) walk.aliases.set(arg.slice(0, eq), arg.slice(eq + 1));
  }
}

function readsScriptFromStdin({ name, args }: EffectiveCommand): boolean {
  const shell = SHELLS.has(name);
  if (!shell && !INTERPRETERS.test(name)) return false;
  if (args.includes('-') || (shell && hasShortFlag(args, 's'))) return true;
  if (shell && hasShortFlag(args, 'c')) return false;
  if (!shell && args.some((a) => a === '-c' || a === '-e' || a === '-m')) return false;
  return operands(args).length === 0;
}

type Rule = { class: RiskClass; reason: string };

/** The classes a single tool invocation falls in, from its name and arguments. */
function classifyTool(command: EffectiveCommand, workspace: string): Rule | undefined {
  const { name, args } = command;
  const words = operands(args);
  if (name === 'git') return classifyGit(args);
  if (['npm', 'pnpm', 'yarn', 'bun'].includes(name)) {
    // Yarn 2+ publishes with `yarn npm publish`.
    const verbs = name === 'yarn' && words[0] === 'npm' ? words.slice(1) : words;
    return firstVerb(verbs, ['publish', 'unpublish']) ? publish(name) : undefined;
  }
  if (name === 'twine' && words[0] === 'upload') return publish('twine');
  if (INTERPRETERS.test(name) && args[0] === '-m' && args[1] === 'twine' && args[2] === 'upload')
    return publish('twine');
  if ((name === 'pip' || name === 'pip3') && words[0] === 'upload') return publish('pip');
  if (['poetry', 'flit', 'hatch', 'cargo'].includes(name) && words[0] === 'publish') return publish(name);
  if (name === 'gem' && words[0] === 'push') return publish('gem');
  if (
    ['docker', 'podman', 'buildah'].includes(name) &&
    (words[0] === 'push' || words.join(' ').startsWith('image push'))
  )
    return publish(name);
  if (name === 'kubectl' && /^(apply|delete|create|replace|patch|scale|rollout|drain|cordon)$/.test(words[0] ?? ''))
    return deploy(`kubectl ${words[0]}`);
  if ((name === 'terraform' || name === 'tofu') && /^(apply|destroy|import)$/.test(words[0] ?? ''))
    return deploy(`${name} ${words[0]}`);
  if (name === 'helm' && /^(install|upgrade|uninstall|delete|rollback)$/.test(words[0] ?? ''))
    return deploy(`helm ${words[0]}`);
  if (name === 'pulumi' && /^(up|destroy|update)$/.test(words[0] ?? '')) return deploy(`pulumi ${words[0]}`);
  if (name === 'rm' || name === 'rmdir' || name === 'shred' || name === 'unlink') {
    const outside = words.find((target) => !isInside(target, workspace));
    if (outside)
      return {
        class: 'delete-outside',
        reason: `it deletes ${outside}, which is outside the workspace (${workspace})`,
      };
  }
  return undefined;
}

function classifyGit(args: string[]): Rule | undefined {
  const words = operands(args.filter((_, i) => !['-C', '-c'].includes(args[i - 1] ?? '')));
  const verb = words[0];
  if (verb === 'push') {
    const forced = args.some(
      (a) => a === '--force' || a.startsWith('--force-with-lease') || a === '--force-if-includes' || a === '--mirror',
    );
    if (forced || hasShortFlag(args, 'f') || words.slice(1).some((w) => w.startsWith('+')) || args.includes('--delete'))
      return { class: 'force-push', reason: 'it rewrites or deletes history on a shared remote branch' };
  }
  if (verb === 'filter-branch' || verb === 'filter-repo')
    return { class: 'force-push', reason: `git ${verb} rewrites the whole history of the repository` };
  return undefined;
}

function firstVerb(words: string[], verbs: string[]): boolean {
  return words.length > 0 && verbs.includes(words[0]!);
}

function publish(tool: string): Rule {
  return { class: 'publish', reason: `${tool} publishes a release to a registry, where everyone can install it` };
}

function deploy(what: string): Rule {
  return { class: 'deploy', reason: `${what} changes running infrastructure outside the sandbox` };
}

/** Whether `target` (absolute, or relative to the workspace) stays inside the workspace. */
function isInside(target: string, workspace: string): boolean {
  if (/^(~|\$HOME|\$\{HOME\})/.test(target)) return false;
  const path = posix.resolve(workspace, target);
  const root = posix.resolve(workspace);
  return path === root || path.startsWith(`${root}/`);
}

function hasExpansion(args: string[]): boolean {
  return args.some((a) => /\$[A-Za-z_{(@*#?0-9]/.test(a));
}

function wordsOf(simple: SimpleCommand): string {
  return simple.words.map((w) => w.text).join(' ');
}

function hold(walk: Walk, riskClass: RiskClass, command: string, reason: string): void {
  walk.findings.push({ class: riskClass, command, reason });
}

function dedupe(findings: RiskFinding[]): RiskFinding[] {
  const seen = new Set<string>();
  return findings.filter((f) => {
    const key = `${f.class}\u0000${f.command}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export type ApprovalDecision =
  | { kind: 'run' }
  | { kind: 'ask'; findings: RiskFinding[] }
  | { kind: 'refuse'; finding: RiskFinding };

/**
 * What happens to a command with these findings: a refused class refuses it outright, any class
 * that asks holds it for a person (all its findings listed), and otherwise it runs.
 */
export function decideApproval(findings: RiskFinding[], ...layers: ApprovalRules[]): ApprovalDecision {
  const ruleOf = (riskClass: RiskClass): ApprovalRule =>
    layers.reduce<ApprovalRule>((rule, layer) => layer[riskClass] ?? rule, defaultApprovalRules[riskClass]);
  const refused = findings.find((f) => ruleOf(f.class) === 'refuse');
  if (refused) return { kind: 'refuse', finding: refused };
  const asked = findings.filter((f) => ruleOf(f.class) === 'ask');
  return asked.length > 0 ? { kind: 'ask', findings: asked } : { kind: 'run' };
}
