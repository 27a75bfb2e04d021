import { z } from 'zod';
import { EngineName } from '../engines/engine.ts';
import type { RelayUpstream } from '../engines/engine-relay.ts';
import type { ModelEnv } from '../models/model-config.ts';
import { emptyAsUndefined, optionalString } from './env-values.ts';

/** The engine settings (docs/engines.md). The relay's upstreams reuse the providers' key and base URL settings. */
export const engineEnvShape = {
  AGENT_ENGINE: z.preprocess(emptyAsUndefined, EngineName.default('patchbay')),
  /** The model Claude Code asks for (the relay forwards it as asked). */
  CLAUDE_CODE_MODEL: optionalString,
  /** A Claude subscription's token (`claude setup-token`), used instead of ANTHROPIC_API_KEY for Claude Code. */
  CLAUDE_CODE_OAUTH_TOKEN: optionalString,
  /** The Claude Code binary on this host; by default the one installed with Patchbay from npm. */
  CLAUDE_CODE_PATH: optionalString,
};

const engineEnvSchema = z.object(engineEnvShape);
export type EngineEnv = z.infer<typeof engineEnvSchema>;

export type EngineConfig = {
  default: EngineName;
  /** Where Anthropic-speaking engines' traffic goes, with the credential added on the host; absent without a key or token. */
  anthropic?: RelayUpstream;
  claudeCodePath?: string;
};

const DEFAULT_CLAUDE_MODEL = 'claude-sonnet-4-6';

export function engineConfigFromEnv(e: EngineEnv & ModelEnv): EngineConfig {
  const model = e.CLAUDE_CODE_MODEL ?? (e.MODEL_PROVIDER === 'anthropic' && e.MODEL ? e.MODEL : DEFAULT_CLAUDE_MODEL);
  const baseUrl = (e.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com').replace(/\/$/, '');
  // A subscription token is sent as Claude Code sends it itself: a bearer token with the OAuth beta.
  const headers: Record<string, string> | undefined = e.CLAUDE_CODE_OAUTH_TOKEN
    ? { authorization: `Bearer ${e.CLAUDE_CODE_OAUTH_TOKEN}`, 'anthropic-beta': 'oauth-2025-04-20' }
    : e.ANTHROPIC_API_KEY
      ? { 'x-api-key': e.ANTHROPIC_API_KEY }
      : undefined;
  return {
    default: e.AGENT_ENGINE,
    ...(headers && { anthropic: { baseUrl, model, headers } }),
    ...(e.CLAUDE_CODE_PATH && { claudeCodePath: e.CLAUDE_CODE_PATH }),
  };
}
