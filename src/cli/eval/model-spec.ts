import { PatchbayError } from '../../core/errors.ts';
import { modelProviderNames } from '../../models/create-model-provider.ts';

/** A `--model` argument: `provider` or `provider:model`, as MODEL_PROVIDER and MODEL name them. */
export type ModelSpec = { provider: string; model?: string };

/** Parses `anthropic:claude-sonnet-4-6`, `openai:gpt-5`, `scripted`; refuses an unknown provider, naming `flag`. */
export function parseModelSpec(text: string, flag = '--model'): ModelSpec {
  const colon = text.indexOf(':');
  const provider = (colon < 0 ? text : text.slice(0, colon)).trim();
  const model = colon < 0 ? '' : text.slice(colon + 1).trim();
  if (!(modelProviderNames as readonly string[]).includes(provider)) {
    throw new PatchbayError(
      'config_invalid',
      `${flag} ${JSON.stringify(text)}: the provider must be one of ${modelProviderNames.join(', ')} (as in anthropic:claude-sonnet-4-6)`,
    );
  }
  if (colon >= 0 && !model)
    throw new PatchbayError(
      'config_invalid',
      `${flag} ${JSON.stringify(text)}: name the model after the colon, or leave out the colon for the provider's default`,
    );
  return model ? { provider, model } : { provider };
}

/** How a spec is named in the tables: `provider` or `provider:model`. */
export function specLabel(spec: ModelSpec): string {
  return spec.model ? `${spec.provider}:${spec.model}` : spec.provider;
}

/**
 * The environment a model spec selects: the rest of the configuration (keys, base URLs) stays as it
 * is. MODEL and VERIFIER_MODEL name models of the configured provider, so they go: the named model
 * (or its provider's default) is also its own verifier unless `--verifier` names one for all.
 */
export function modelEnv(env: Record<string, string | undefined>, spec: ModelSpec): Record<string, string | undefined> {
  const { MODEL: _model, VERIFIER_MODEL: _verifier, ...rest } = env;
  return { ...rest, MODEL_PROVIDER: spec.provider, ...(spec.model && { MODEL: spec.model }) };
}
