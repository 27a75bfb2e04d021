import { fileURLToPath } from 'node:url';

/**
 * Patchbay's own files that decide what an engine may do (the host's, never the workspace's):
 * Claude Code's managed settings (`managed-settings.json`), Codex's managed requirements
 * (`requirements.toml`), and the PreToolUse hook both name (`patchbay-gate.mjs`), which asks the
 * run's gate through the relay. Local sandboxes show this directory read-only where each CLI reads
 * its managed configuration (CLAUDE_MANAGED_DIR, CODEX_MANAGED_DIR).
 */
export const ENGINE_HOOKS_HOST_DIR = fileURLToPath(new URL('./engine-hooks', import.meta.url));

/** Where Claude Code reads its managed settings on Linux: the layer no other settings override. */
export const CLAUDE_MANAGED_DIR = '/etc/claude-code';

/** Where Codex reads its managed requirements on Linux (`requirements.toml`): hooks there need no trust step. */
export const CODEX_MANAGED_DIR = '/etc/codex';
