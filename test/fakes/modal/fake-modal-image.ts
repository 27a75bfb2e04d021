import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Config } from '../../../src/config.ts';
import { claudeCodeCli } from '../../../src/start/engine-wiring.ts';
import { codexCli, opencodeCli } from '../../../src/start/openai-engine-clis.ts';

/** A command an image's build put on its PATH: its name there, and the host binary standing in for it. */
export type ImageTool = { bin: string; hostPath: string };

/**
 * A file or directory a RUN step wrote under /etc, as the build left it (the build runs as root, and
 * `chown root:root` keeps it root's): its bytes (none for a directory) and its mode.
 */
export type ImageFile = { path: string; mode: number; bytes?: Buffer };

/**
 * What building a registry image's Dockerfile commands gives: the CLIs `npm install -g` put on PATH,
 * the files its RUN steps wrote under /etc, or why the build fails.
 */
export type ImageBuild = { from: string; tools: ImageTool[]; files: ImageFile[]; failure?: string };

/**
 * The npm packages the fake's "registry" holds: the engines' CLIs, each at the one version npm
 * installed with Patchbay here, whose binary stands in for what `npm install -g` would put in
 * /usr/local/bin. (opencode-ai's version is its platform package's: the wrapper is not installed here.)
 */
function registry(): Record<string, { version: string; bin: string; hostPath: string | undefined }> {
  const none = { engines: {} } as Pick<Config, 'engines'>;
  return {
    '@anthropic-ai/claude-code': {
      version: versionOf('@anthropic-ai/claude-code'),
      bin: 'claude',
      hostPath: claudeCodeCli(none),
    },
    '@openai/codex': { version: versionOf('@openai/codex'), bin: 'codex', hostPath: codexCli(none) },
    'opencode-ai': {
      version: versionOf(`opencode-${process.platform}-${process.arch}`),
      bin: 'opencode',
      hostPath: opencodeCli(none),
    },
  };
}

function versionOf(pkg: string): string {
  const file = createRequire(import.meta.url).resolve(`${pkg}/package.json`);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * "Builds" a registry image as far as the fake can: every `npm install -g` (or `npm i -g`) in its
 * RUN commands must name packages the fake's registry holds at the versions it holds (as npm fails
 * a build with ETARGET for a version it does not have, the fake fails it for any it cannot stand
 * in for), and the base image must have npm (a `node:` image). Files are written by exactly the
 * steps `runFileStep` knows (`mkdir -p`, `echo <base64> | base64 -d > <file>`, `chown -R root:root`,
 * `chmod`), under /etc only; a step that writes a file any other way fails the build. Other
 * commands are not run.
 */
export function buildImage(
  commands: readonly string[],
  parent?: { from: string; tools: ImageTool[]; files?: ImageFile[] },
): ImageBuild {
  const named = /^FROM (\S+)/.exec(commands[0] ?? '')?.[1] ?? '';
  // The SDK layers Dockerfile commands on a registry image as `FROM base` with that image as its base.
  const base = named === 'base' && parent ? parent.from : named;
  const tools: ImageTool[] = [...(parent?.tools ?? [])];
  const files = new Map((parent?.files ?? []).map((f) => [f.path, { ...f }]));
  for (const command of commands.slice(1)) {
    if (!command.startsWith('RUN ')) continue;
    for (const part of command.slice(4).split(/&&|;/)) {
      const words = part.trim().split(/\s+/);
      const failure = isNpmInstall(words) ? npmInstall(words, base, tools) : runFileStep(part.trim(), files);
      if (failure) return { from: base, tools: [], files: [], failure };
    }
  }
  return { from: base, tools, files: [...files.values()] };
}

function isNpmInstall(words: string[]): boolean {
  return words[0] === 'npm' && ['install', 'i'].includes(words[1] ?? '') && words.includes('-g');
}

/** Adds the packages `npm install -g` names to `tools`, or says why the build fails. */
function npmInstall(words: string[], base: string, tools: ImageTool[]): string | undefined {
  if (!base.startsWith('node:')) return `/bin/sh: 1: npm: not found (the base image ${base} has no Node)`;
  const known = registry();
  for (const spec of words.slice(2).filter((w) => !w.startsWith('-'))) {
    const at = spec.lastIndexOf('@');
    const name = at > 0 ? spec.slice(0, at) : spec;
    const version = at > 0 ? spec.slice(at + 1) : undefined;
    const pkg = known[name];
    if (!pkg?.hostPath || version !== pkg.version)
      return `npm error notarget No matching version found for ${spec} (the fake's registry holds ${Object.entries(
        known,
      )
        .map(([n, p]) => `${n}@${p.version}`)
        .join(', ')})`;
    tools.push({ bin: pkg.bin, hostPath: pkg.hostPath });
  }
  return undefined;
}

const ETC_PATH = /^\/etc\/[\w.-]+(\/[\w.-]+)*$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * Runs one shell step that makes files, on `files` (path → file), as sh would in a root build:
 * `mkdir -p DIR…` (only /etc's are kept), `echo BASE64 | base64 -d > FILE` (its directory must exist), `chown -R root:root
 * PATH…` and `chmod MODE PATH…` (octal; each path must exist). Any other step that names /etc or
 * base64, or makes files outside /etc, fails the build with what the fake cannot run (it would not
 * show them); other steps are not run.
 */
function runFileStep(step: string, files: Map<string, ImageFile>): string | undefined {
  const words = step.split(/\s+/);
  const cannot = `the fake cannot run \`${step.slice(0, 120)}\`: it writes files only by mkdir -p, echo <base64> | base64 -d > <file>, chown -R root:root and chmod, under /etc`;
  const write = /^echo (\S+) \| base64 -d > (\S+)$/.exec(step);
  if (write) {
    const [, data, path] = write as unknown as [string, string, string];
    if (!ETC_PATH.test(path)) return cannot;
    if (!BASE64.test(data) || data.length % 4 !== 0) return 'base64: invalid input';
    const dir = files.get(path.slice(0, path.lastIndexOf('/')));
    if (!dir || dir.bytes !== undefined) return `/bin/sh: 1: cannot create ${path}: Directory nonexistent`;
    files.set(path, { path, mode: 0o644, bytes: Buffer.from(data, 'base64') });
    return undefined;
  }
  if (words[0] === 'mkdir' && words[1] === '-p') {
    // Directories elsewhere (/workspace in the default image) are not shown: not run, as before.
    for (const dir of words.slice(2).filter((d) => ETC_PATH.test(d)))
      if (!files.has(dir)) files.set(dir, { path: dir, mode: 0o755 });
    return undefined;
  }
  const chmod = words[0] === 'chmod' && /^[0-7]{3,4}$/.test(words[1] ?? '');
  const chown = words[0] === 'chown' && words[1] === '-R' && words[2] === 'root:root';
  if (chmod || chown) {
    const paths = words.slice(chmod ? 2 : 3);
    if (!paths.some((p) => p.startsWith('/etc/'))) return undefined;
    const missing = paths.find((p) => !files.has(p));
    if (missing !== undefined)
      return ETC_PATH.test(missing) ? `${words[0]}: cannot access '${missing}': No such file or directory` : cannot;
    if (chmod) for (const p of paths) files.get(p)!.mode = Number.parseInt(words[1]!, 8);
    return undefined;
  }
  return /\/etc\/|\bbase64\b/.test(step) ? cannot : undefined;
}
