import { operands } from './command-words.ts';
import type { EffectiveCommand } from './command-words.ts';

/** Subcommands after which `publish` is only an argument (`npm run publish`, `npm help publish`). */
const NOT_PUBLISHING = new Set([
  'run',
  'run-script',
  'exec',
  'x',
  'dlx',
  'help',
  'view',
  'info',
  'show',
  'why',
  'install',
  'i',
  'add',
  'remove',
  'uninstall',
]);

/** Tools that publish with one verb as their first operand: `cargo publish`, `gem push`. */
const VERB_PUBLISHERS: Record<string, readonly string[]> = {
  twine: ['upload'],
  pip: ['upload'],
  pip3: ['upload'],
  poetry: ['publish'],
  flit: ['publish'],
  hatch: ['publish'],
  uv: ['publish'],
  pdm: ['publish'],
  cargo: ['publish'],
  gem: ['push'],
  docker: ['push'],
  podman: ['push'],
  buildah: ['push'],
  nerdctl: ['push'],
  helm: ['push'],
  nuget: ['push'],
  vsce: ['publish'],
  ovsx: ['publish'],
  deno: ['publish'],
  jsr: ['publish'],
  lerna: ['publish'],
  changeset: ['publish'],
  goreleaser: ['release'],
  anaconda: ['upload'],
};

/** Release tools whose every run publishes. */
const ALWAYS_PUBLISH = new Set(['semantic-release', 'release-it', 'np']);

/**
 * The tool a command publishes a release with (a package, an image, a crate, a GitHub release), or
 * undefined when it does not publish. Publishing reaches everyone who installs from that registry,
 * so it is refused at every autonomy level unless an operator's rule allows it: the
 * command policy and the risk classifier both ask this one function.
 */
export function publishingTool(command: EffectiveCommand): string | undefined {
  const { name, args } = command;
  const words = operands(args);
  if (name === 'npm' || name === 'pnpm' || name === 'bun' || name === 'yarn') return packageManager(name, words);
  if (/^python[\d.]*$/.test(name) && args[0] === '-m' && args[1] === 'twine' && args.includes('upload')) return 'twine';
  const verbs = VERB_PUBLISHERS[name];
  if (verbs?.includes(words[0] ?? '')) return name;
  if (ALWAYS_PUBLISH.has(name)) return name;
  if (/^(docker|podman|buildah|nerdctl)$/.test(name) && /^(image|manifest) push/.test(words.join(' '))) return name;
  if (name === 'docker' && words[0] === 'buildx' && args.includes('--push')) return 'docker buildx';
  if (/^mvnw?$/.test(name) && words.some((w) => /^(deploy|deploy:[\w-]+|release:perform)$/.test(w))) return name;
  if (/^gradlew?$/.test(name) && words.some(isGradlePublishTask)) return name;
  if (name === 'dotnet' && words[0] === 'nuget' && words[1] === 'push') return 'dotnet nuget';
  if (name === 'gh' && words[0] === 'release' && /^(create|upload|edit)$/.test(words[1] ?? '')) return 'gh release';
  if ((name === 'dart' || name === 'flutter') && words[0] === 'pub' && words[1] === 'publish') return name;
  if (name === 'mix' && words[0] === 'hex.publish') return 'mix';
  return undefined;
}

/** `npm publish`, `yarn npm publish` (Yarn 2+), `pnpm --filter x publish`; not `npm run publish`. */
function packageManager(name: string, words: string[]): string | undefined {
  // Option values (`--registry URL`) land among the operands; publish must still be the first verb.
  const verb = words.findIndex((w) => w === 'publish' || w === 'unpublish');
  if (verb === -1 || words.slice(0, verb).some((w) => NOT_PUBLISHING.has(w))) return undefined;
  return name;
}

/** `publish`, `:lib:publish`, `publishAllPublicationsToSonatypeRepository`; not `publishToMavenLocal` (this machine only). */
function isGradlePublishTask(task: string): boolean {
  const last = task.slice(task.lastIndexOf(':') + 1);
  return /^publish/.test(last) && !/ToMavenLocal$/.test(last);
}
