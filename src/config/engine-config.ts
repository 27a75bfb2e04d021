import { z } from 'zod';
import { PatchbayError } from '../core/errors.ts';
import { EngineName } from '../engines/engine.ts';
import type { RelayUpstream } from '../engines/engine-relay.ts';
import type { RelayApi } from '../engines/engine.ts';
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
  /** The model OpenAI-speaking engines ask for (Codex, and OpenCode with OPENCODE_API=openai). */
  CODEX_MODEL: optionalString,
  /** The Codex binary on this host; by default the one installed with Patchbay from npm. */
  CODEX_PATH: optionalString,
  /** `chatgpt`: Codex's traffic goes to the ChatGPT backend with the sign-in `patchbay engines codex-import` stored. */
  CODEX_AUTH: z.preprocess(emptyAsUndefined, z.enum(['api-key', 'chatgpt']).default('api-key')),
  /** The ChatGPT backend Codex's Responses calls go to with a ChatGPT sign-in. */
  CHATGPT_BASE_URL: z.preprocess(emptyAsUndefined, z.url().default('https://chatgpt.com/backend-api/codex')),
  /** OpenAI's sign-in server, whose /oauth/token refreshes the ChatGPT sign-in. */
  OPENAI_AUTH_URL: z.preprocess(emptyAsUndefined, z.url().default('https://auth.openai.com')),
  /** The OpenCode binary on this host; by default the one installed with Patchbay from npm. */
  OPENCODE_PATH: optionalString,
  /** The wire format OpenCode's model traffic speaks: `openai` (Responses) or `anthropic` (Messages). */
  OPENCODE_API: z.preprocess(emptyAsUndefined, z.enum(['openai', 'anthropic']).optional()),
};

const engineEnvSchema = z.object(engineEnvShape);
export type EngineEnv = z.infer<typeof engineEnvSchema>;

export type EngineConfig = {
  default: EngineName;
  /** Where Anthropic-speaking engines' traffic goes, with the credential added on the host; absent without a key or token. */
  anthropic?: RelayUpstream;
  claudeCodePath?: string;
  /** Where OpenAI-speaking engines' traffic goes (OpenAI's API, or OpenCode Zen's), with the key added on the host. */
  openai?: RelayUpstream;
  codexPath?: string;
  /** CODEX_AUTH=chatgpt: `openai` is the ChatGPT backend, its sign-in refreshed at `tokenUrl`, sealed with `secretKey`. */
  chatgpt?: { authUrl: string; tokenUrl: string; secretKey: string };
  opencodePath?: string;
  opencodeApi: RelayApi;
};

const DEFAULT_CLAUDE_MODEL = 'claude-sonnet-4-6';

export function engineConfigFromEnv(
  e: EngineEnv & ModelEnv & { PATCHBAY_SECRET_KEY?: string | undefined },
): EngineConfig {
  const model = e.CLAUDE_CODE_MODEL ?? (e.MODEL_PROVIDER === 'anthropic' && e.MODEL ? e.MODEL : DEFAULT_CLAUDE_MODEL);
  const baseUrl = (e.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com').replace(/\/$/, '');
  // A subscription token is sent as Claude Code sends it itself: a bearer token with the OAuth beta.
  const headers: Record<string, string> | undefined = e.CLAUDE_CODE_OAUTH_TOKEN
    ? { authorization: `Bearer ${e.CLAUDE_CODE_OAUTH_TOKEN}`, 'anthropic-beta': 'oauth-2025-04-20' }
    : e.ANTHROPIC_API_KEY
      ? { 'x-api-key': e.ANTHROPIC_API_KEY }
      : undefined;
  const chatgpt = chatgptConfig(e);
  const openai = chatgpt ? chatgptUpstream(e) : openaiUpstream(e);
  return {
    default: e.AGENT_ENGINE,
    ...(headers && { anthropic: { baseUrl, model, headers } }),
    ...(e.CLAUDE_CODE_PATH && { claudeCodePath: e.CLAUDE_CODE_PATH }),
    ...(openai && { openai }),
    ...(e.CODEX_PATH && { codexPath: e.CODEX_PATH }),
    ...(chatgpt && { chatgpt }),
    ...(e.OPENCODE_PATH && { opencodePath: e.OPENCODE_PATH }),
    opencodeApi: e.OPENCODE_API ?? (openai || !headers ? 'openai' : 'anthropic'),
  };
}

const DEFAULT_CODEX_MODEL = 'gpt-5.5';

function codexModel(e: EngineEnv & ModelEnv): string {
  const fromModel = e.MODEL_PROVIDER === 'openai' || e.MODEL_PROVIDER === 'opencode-zen' ? e.MODEL : undefined;
  return e.CODEX_MODEL ?? fromModel ?? DEFAULT_CODEX_MODEL;
}

/** CODEX_AUTH=chatgpt's settings; the sign-in is stored sealed, so PATCHBAY_SECRET_KEY is required. */
function chatgptConfig(e: EngineEnv & { PATCHBAY_SECRET_KEY?: string | undefined }): EngineConfig['chatgpt'] {
  if (e.CODEX_AUTH !== 'chatgpt') return undefined;
  if (!e.PATCHBAY_SECRET_KEY)
    throw new PatchbayError(
      'config_invalid',
      'CODEX_AUTH=chatgpt stores the ChatGPT sign-in encrypted: set PATCHBAY_SECRET_KEY (32+ random characters)',
    );
  const authUrl = e.OPENAI_AUTH_URL.replace(/\/+$/, '');
  return { authUrl, tokenUrl: `${authUrl}/oauth/token`, secretKey: e.PATCHBAY_SECRET_KEY };
}

/** The ChatGPT backend (its paths have no /v1); the sign-in's headers are added per call by the relay. */
function chatgptUpstream(e: EngineEnv & ModelEnv): RelayUpstream {
  return { baseUrl: e.CHATGPT_BASE_URL.replace(/\/+$/, ''), model: codexModel(e), headers: {}, unversioned: true };
}

/**
 * The OpenAI-speaking upstream: OPENAI_API_KEY at OPENAI_BASE_URL, else an OpenCode Zen key at Zen's
 * Responses route. The relay forwards the engine's `/v1/…` path, so the base loses its `/v1`.
 */
function openaiUpstream(e: EngineEnv & ModelEnv): RelayUpstream | undefined {
  const model = codexModel(e);
  const origin = (url: string) => url.replace(/\/+$/, '').replace(/\/v1$/, '');
  if (e.OPENAI_API_KEY)
    return {
      baseUrl: origin(e.OPENAI_BASE_URL ?? 'https://api.openai.com/v1'),
      model,
      headers: { authorization: `Bearer ${e.OPENAI_API_KEY}` },
    };
  if (e.OPENCODE_ZEN_API_KEY)
    return {
      baseUrl: origin(e.OPENCODE_ZEN_BASE_URL ?? 'https://opencode.ai/zen/v1'),
      model,
      headers: { authorization: `Bearer ${e.OPENCODE_ZEN_API_KEY}` },
    };
  return undefined;
}
