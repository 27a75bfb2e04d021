import { type EngineName, EngineName as EngineNameSchema } from './engine.ts';

/** Where a session's engine came from, most specific first. */
export type EngineChoice = { engine: EngineName; source: 'request' | 'repository' | 'installation' };

const REQUEST_ENGINE = /\b(?:with|using)\s+(claude[- ]code|codex|opencode|patchbay)\s*:/i;

/**
 * The engine a session runs: the request's own words ("with codex: …") first, then the repository's
 * knowledge document, then the installation's AGENT_ENGINE. Pure.
 */
export function chooseEngine(
  prompt: string,
  repository: EngineName | undefined,
  installation: EngineName,
): EngineChoice {
  const named = REQUEST_ENGINE.exec(prompt.split('\n', 1)[0] ?? '')?.[1]
    ?.toLowerCase()
    .replace(' ', '-');
  const parsed = EngineNameSchema.safeParse(named);
  if (parsed.success) return { engine: parsed.data, source: 'request' };
  if (repository) return { engine: repository, source: 'repository' };
  return { engine: installation, source: 'installation' };
}

/** How the thread, the page and the PR name an engine. */
export function engineLabel(engine: EngineName): string {
  switch (engine) {
    case 'patchbay':
      return "Patchbay's own agent";
    case 'claude-code':
      return 'Claude Code';
    case 'codex':
      return 'Codex';
    case 'opencode':
      return 'OpenCode';
    default: {
      const _never: never = engine;
      return _never;
    }
  }
}
