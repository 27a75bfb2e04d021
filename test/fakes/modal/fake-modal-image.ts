import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Config } from '../../../src/config.ts';
import { claudeCodeCli } from '../../../src/start/engine-wiring.ts';
import { codexCli, opencodeCli } from '../../../src/start/openai-engine-clis.ts';

/** A command an image's build put on its PATH: its name there, and the host binary standing in for it. */
export type ImageTool = { bin: string; hostPath: string };

/** What building a registry image's Dockerfile commands gives: the CLIs `npm install -g` put on PATH, or why the build fails. */
export type ImageBuild = { from: string; tools: ImageTool[]; failure?: string };

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
 * in for), and the base image must have npm (a `node:` image). Other commands are not run.
 */
export function buildImage(commands: readonly string[], parent?: { from: string; tools: ImageTool[] }): ImageBuild {
  const named = /^FROM (\S+)/.exec(commands[0] ?? '')?.[1] ?? '';
  // The SDK layers Dockerfile commands on a registry image as `FROM base` with that image as its base.
  const base = named === 'base' && parent ? parent.from : named;
  const known = registry();
  const tools: ImageTool[] = [...(parent?.tools ?? [])];
  for (const command of commands.slice(1)) {
    if (!command.startsWith('RUN ')) continue;
    for (const part of command.slice(4).split(/&&|;/)) {
      const words = part.trim().split(/\s+/);
      if (words[0] !== 'npm' || !['install', 'i'].includes(words[1] ?? '') || !words.includes('-g')) continue;
      if (!base.startsWith('node:'))
        return { from: base, tools: [], failure: `/bin/sh: 1: npm: not found (the base image ${base} has no Node)` };
      for (const spec of words.slice(2).filter((w) => !w.startsWith('-'))) {
        const at = spec.lastIndexOf('@');
        const name = at > 0 ? spec.slice(0, at) : spec;
        const version = at > 0 ? spec.slice(at + 1) : undefined;
        const pkg = known[name];
        if (!pkg?.hostPath || version !== pkg.version)
          return {
            from: base,
            tools: [],
            failure: `npm error notarget No matching version found for ${spec} (the fake's registry holds ${Object.entries(
              known,
            )
              .map(([n, p]) => `${n}@${p.version}`)
              .join(', ')})`,
          };
        tools.push({ bin: pkg.bin, hostPath: pkg.hostPath });
      }
    }
  }
  return { from: base, tools };
}
