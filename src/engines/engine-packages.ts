import type { CliEngineName } from './engine.ts';

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

/**
 * The Dockerfile command that installs `engines`' CLIs at their pinned versions into an image with
 * Node and npm (the default Modal image is `node:22-bookworm-slim`), or none for no engines.
 */
export function engineImageCommands(engines: readonly CliEngineName[]): string[] {
  if (engines.length === 0) return [];
  const specs = [...new Set(engines)]
    .sort()
    .map((name) => `${ENGINE_PACKAGES[name].npm}@${ENGINE_PACKAGES[name].version}`);
  return [`RUN npm install -g --no-fund --no-audit ${specs.join(' ')}`];
}
