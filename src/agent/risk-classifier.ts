import { posix } from 'node:path';
import { type ApprovalRule, type ApprovalRules, defaultApprovalRules, type RiskClass } from '../core/approval-rules.ts';
import { type EffectiveCommand, effectiveCommand, hasShortFlag, operands } from './command-words.ts';
import { inlineCode, inlineRisk } from './inline-code.ts';
import { packageScripts, scriptText } from './package-scripts.ts';
import { npmDeclares, type PackageRun, packageName, packageRun, pythonDeclares } from './package-runs.ts';
import { publishingTool } from './publish-commands.ts';
import { shellQuote } from './shell-quote.ts';
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
const BUILD_WRAPPERS = /^(mvnw|gradlew)$/;
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
  'mvn',
  'mvnw',
  'gradle',
  'gradlew',
  'dotnet',
  'gh',
  'uv',
  'npx',
  'find',
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
  if (classifyInline(command, text, walk)) return;
  if (command.name === 'find') classifyFind(command.args, walk);
  const run = packageRun(command);
  if (run) classifyPackageRun(run, text, walk);
  for (const script of packageScripts(command) ?? []) {
    const body = scriptText(walk.readScript?.('package.json'), script);
    if (body !== undefined) nested(walk, body);
  }
  const rule = classifyTool(command, walk.workspace);
  if (rule) hold(walk, rule.class, text, rule.reason);
}

/** `sh -c`, `eval`, `source`, `bash script.sh`, `./script.sh`: reads what they run. True when it was such a command. */
function runsCode(command: EffectiveCommand, walk: Walk): boolean {
  const { name, args } = command;
  if (name === 'eval') return nested(walk, args.join(' '));
  if (SHELLS.has(name)) {
    const flag = args.findIndex((a) => /^-[A-Za-z]*c[A-Za-z]*$/.test(a));
    // `bash -c -- 'script'`: the script is the first word after the options' end.
    if (flag !== -1) return nested(walk, (args[flag + 1] === '--' ? args[flag + 2] : args[flag + 1]) ?? '');
    const script = operands(args)[0];
    return script === undefined || script === '-' ? true : scriptFile(script, walk);
  }
  if (name === 'source' || name === '.') return args[0] === undefined ? true : scriptFile(args[0], walk);
  const invoked = command.words[0]?.text ?? name;
  // The Maven and Gradle wrappers only start the build tool: their arguments are what is read.
  if (invoked.includes('/') && !INTERPRETERS.test(name) && !BUILD_WRAPPERS.test(name)) return scriptFile(invoked, walk);
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

/**
 * `node -e`, `python -c`, `perl -e`, an awk program: code that starts processes (or hides what it
 * runs: evaluated strings, decoding) is held as inline-code, and each string literal it holds is
 * read as a command it might hand a shell. True when the command runs inline code.
 */
function classifyInline(command: EffectiveCommand, text: string, walk: Walk): boolean {
  const inline = inlineCode(command);
  if (!inline) return false;
  const risk = inlineRisk(inline);
  if (risk.runs === undefined) return true;
  for (const literal of risk.literals) nested(walk, literal);
  // `['cargo', 'publish']`: a list of literals is one command's words.
  if (risk.literals.length > 1) nested(walk, risk.literals.map(shellQuote).join(' '));
  hold(
    walk,
    'inline-code',
    text,
    `it runs ${inline.language} code given on the command line that can start other programs or build code at run time (${risk.runs.trim()}), so what it runs cannot be read`,
  );
  return true;
}

/** `find … -exec cmd {} ;` (and -execdir, -ok, -okdir) runs cmd on every match, each start point standing for `{}`. */
function classifyFind(args: string[], walk: Walk): void {
  const firstTest = args.findIndex((a) => /^[-(!]/.test(a));
  const starts = (firstTest === -1 ? args : args.slice(0, firstTest)).filter((a) => !a.startsWith('-'));
  const roots = starts.length > 0 ? starts : ['.'];
  args.forEach((arg, i) => {
    if (!/^-(exec|execdir|ok|okdir)$/.test(arg)) return;
    const end = args.findIndex((a, j) => j > i && (a === ';' || a === '+'));
    const words = args.slice(i + 1, end === -1 ? undefined : end);
    for (const root of roots) nested(walk, words.map((w) => shellQuote(w.replaceAll('{}', root))).join(' '));
  });
  if (args.includes('-delete')) for (const root of roots) nested(walk, `rm -r -- ${shellQuote(root)}`);
}

/**
 * `npx x`, `pnpm dlx x`, `uvx x`: a package the workspace does not declare (or a version, URL or
 * path instead of a name) is fetched and run unread, so it is held; what it runs is read as well.
 */
function classifyPackageRun(run: PackageRun, text: string, walk: Walk): void {
  if (run.script !== undefined) nested(walk, run.script);
  if (run.inner.length > 0) nested(walk, run.inner.map(shellQuote).join(' '));
  const unknown = run.packages.filter((spec) => !declared(run, spec, walk));
  if (run.packages.length === 0 && run.script === undefined) return;
  if (unknown.length > 0)
    hold(
      walk,
      'unknown-package',
      text,
      `${run.runner} fetches and runs ${unknown.join(', ')}, which this workspace does not declare as a dependency`,
    );
}

function declared(run: PackageRun, spec: string, walk: Walk): boolean {
  if (run.localBin === spec && walk.readScript?.(`node_modules/.bin/${spec}`) !== undefined) return true;
  const name = packageName(spec, run.ecosystem);
  if (name === undefined) return false;
  if (run.ecosystem === 'npm') {
    const manifest = walk.readScript?.('package.json');
    return manifest !== undefined && npmDeclares(manifest, name);
  }
  return ['pyproject.toml', 'requirements.txt', 'requirements-dev.txt'].some((file) => {
    const manifest = walk.readScript?.(file);
    return manifest !== undefined && pythonDeclares(manifest, name);
  });
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
  const publisher = publishingTool(command);
  if (publisher) return publish(publisher);
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
