import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CliEngineName } from './engine.ts';
import { CLAUDE_MANAGED_DIR, CODEX_MANAGED_DIR, ENGINE_HOOKS_HOST_DIR } from './engine-hooks.ts';

/**
 * Each engine's CLI as npm publishes it: the package, the version Patchbay pins (the same as
 * package.json; a test holds them equal) and the command `npm install -g` puts on PATH. A local
 * sandbox binds the platform binary npm installed with Patchbay; a Modal image installs these.
 */
export const ENGINE_PACKAGES: Record<CliEngineName, { npm: string; version: string; bin: string }> = {
  'claude-code': { npm: '@anthropic-ai/claude-code', version: '2.1.332', bin: 'claude' },
  codex: { npm: '@openai/codex', version: '0.171.0', bin: 'codex' },
  // The wrapper installs its platform's binary (optional dependencies); package.json pins those.
  opencode: { npm: 'opencode-ai', version: '1.18.33', bin: 'opencode' },
};

/** The managed files of engine-hooks.ts, written into the Modal image where each engine reads them. */
export const ENGINE_HOOK_FILES = ['managed-settings.json', 'patchbay-gate.mjs', 'requirements.toml'] as const;

/** Where each engine with a PreToolUse hook reads Patchbay's managed files (opencode has none). */
const MANAGED_DIRS: Partial<Record<CliEngineName, string>> = {
  'claude-code': CLAUDE_MANAGED_DIR,
  codex: CODEX_MANAGED_DIR,
};

/**
 * The Dockerfile commands that install `engines`' CLIs at their pinned versions into an image with
 * Node and npm (the default Modal image is `node:22-bookworm-slim`), then write Patchbay's managed
 * files (the gate's hook) where Claude Code and Codex read them, root-owned and read-only as a local
 * sandbox's bind shows them; none for no engines. The files go in as base64 of their bytes, so the
 * commands change only when the files do and the image's layers cache.
 */
export function engineImageCommands(engines: readonly CliEngineName[]): string[] {
  if (engines.length === 0) return [];
  const names = [...new Set(engines)].sort();
  const specs = names.map((name) => `${ENGINE_PACKAGES[name].npm}@${ENGINE_PACKAGES[name].version}`);
  const dirs = names.flatMap((name) => MANAGED_DIRS[name] ?? []);
  return [`RUN npm install -g --no-fund --no-audit ${specs.join(' ')}`, ...dirs.map(managedFilesCommand)];
}

/** One RUN step that writes the three managed files into `dir`: files 0444 and the directory 0555, owned by root. */
function managedFilesCommand(dir: string): string {
  const writes = ENGINE_HOOK_FILES.map((file) => {
    const base64 = readFileSync(join(ENGINE_HOOKS_HOST_DIR, file)).toString('base64');
    return `echo ${base64} | base64 -d > ${dir}/${file}`;
  });
  const files = ENGINE_HOOK_FILES.map((file) => `${dir}/${file}`).join(' ');
  return [
    `RUN mkdir -p ${dir}`,
    ...writes,
    `chown -R root:root ${dir}`,
    `chmod 0444 ${files}`,
    `chmod 0555 ${dir}`,
  ].join(' && ');
}
