import type { Usage } from './model-provider.ts';

/**
 * What Patchbay knows about models it has been used with: context window and list price in USD
 * per million tokens. `inputTokens` in Usage counts every prompt token, cached or not, so the
 * uncached part is input − cacheRead − cacheWrite. Prices are the vendors' public list prices at
 * the time of writing; unknown models get no estimate rather than a wrong one.
 */
export type ModelPrice = { input: number; output: number; cacheRead: number; cacheWrite: number };
/** `maxOutput`: the vendor's cap on one reply, where it is below what Patchbay asks for (16,000). */
export type ModelInfo = { contextWindow: number; price: ModelPrice; maxOutput?: number };

const anthropic = (input: number, output: number): ModelPrice => ({
  input,
  output,
  cacheRead: input * 0.1,
  cacheWrite: input * 1.25,
});
const openai = (input: number, output: number, cacheRead: number): ModelPrice => ({
  input,
  output,
  cacheRead,
  cacheWrite: input,
});

/**
 * Claude ids match exactly or with a date suffix (a new minor version may have a new price);
 * GPT ids match by family prefix (`gpt-5.1-codex` is priced as `gpt-5`), longest prefix first.
 */
const catalog: Record<string, ModelInfo> = {
  'claude-opus-4-6': { contextWindow: 200_000, price: anthropic(5, 25) },
  'claude-opus-4-5': { contextWindow: 200_000, price: anthropic(5, 25) },
  'claude-opus-4-1': { contextWindow: 200_000, price: anthropic(15, 75) },
  'claude-opus-4': { contextWindow: 200_000, price: anthropic(15, 75) },
  'claude-opus-4-0': { contextWindow: 200_000, price: anthropic(15, 75) },
  'claude-sonnet-4-6': { contextWindow: 200_000, price: anthropic(3, 15) },
  'claude-sonnet-4-5': { contextWindow: 200_000, price: anthropic(3, 15) },
  'claude-sonnet-4': { contextWindow: 200_000, price: anthropic(3, 15) },
  'claude-sonnet-4-0': { contextWindow: 200_000, price: anthropic(3, 15) },
  'claude-3-7-sonnet': { contextWindow: 200_000, price: anthropic(3, 15) },
  'claude-haiku-4-5': { contextWindow: 200_000, price: anthropic(1, 5) },
  'claude-3-5-haiku': { contextWindow: 200_000, price: anthropic(0.8, 4), maxOutput: 8_192 },
  'gpt-5-nano': { contextWindow: 400_000, price: openai(0.05, 0.4, 0.005) },
  'gpt-5-mini': { contextWindow: 400_000, price: openai(0.25, 2, 0.025) },
  'gpt-5.1-codex-mini': { contextWindow: 400_000, price: openai(0.25, 2, 0.025) },
  'gpt-5.2': { contextWindow: 400_000, price: openai(1.75, 14, 0.175) },
  'gpt-5': { contextWindow: 400_000, price: openai(1.25, 10, 0.125) },
  'gpt-4.1-mini': { contextWindow: 1_047_576, price: openai(0.4, 1.6, 0.1) },
  'gpt-4.1': { contextWindow: 1_047_576, price: openai(2, 8, 0.5) },
  'gpt-4o-mini': { contextWindow: 128_000, price: openai(0.15, 0.6, 0.075), maxOutput: 16_384 },
  'gpt-4o': { contextWindow: 128_000, price: openai(2.5, 10, 1.25), maxOutput: 16_384 },
  // Patchbay's own scripted provider (the demo, tests, benches) calls no model: it costs nothing.
  scripted: { contextWindow: 128_000, price: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } },
};

const keys = Object.keys(catalog).sort((a, b) => b.length - a.length);

export function modelInfo(model: string): ModelInfo | undefined {
  const bare = model.replace(/^.*\//, '').toLowerCase();
  const key = keys.find((k) => {
    if (!bare.startsWith(k)) return false;
    const rest = bare.slice(k.length);
    if (k.startsWith('claude-')) return rest === '' || /^-(\d{8}|latest)$/.test(rest);
    return rest === '' || rest.startsWith('-') || rest.startsWith('.');
  });
  return key ? catalog[key] : undefined;
}

/** Context window to budget against when the catalog does not know the model. */
export const defaultContextWindow = 128_000;

export function contextWindowFor(model: string): number {
  return modelInfo(model)?.contextWindow ?? defaultContextWindow;
}

export function estimateCostUsd(model: string, usage: Usage): number | undefined {
  const info = modelInfo(model);
  return info ? costAt(info.price, usage) : undefined;
}

/** Dollars for `usage` at `p` (USD per million tokens). */
export function costAt(p: ModelPrice, usage: Usage): number {
  const uncached = Math.max(0, usage.inputTokens - usage.cacheReadTokens - usage.cacheWriteTokens);
  const micro =
    uncached * p.input +
    usage.cacheReadTokens * p.cacheRead +
    usage.cacheWriteTokens * p.cacheWrite +
    usage.outputTokens * p.output;
  return micro / 1_000_000;
}

/**
 * What a model the catalog does not know costs for budgets: the highest list price in the catalog
 * ($15 input, $75 output per million tokens, Claude Opus 4.1), so a budget still ends a run whose
 * model has no known price instead of counting it as free.
 */
export const unknownModelPrice: ModelPrice = anthropic(15, 75);

/** Dollars counted against budgets: the list price, or `unknownModelPrice` for an unknown model. */
export function budgetCostUsd(model: string, usage: Usage): number {
  return costAt(modelInfo(model)?.price ?? unknownModelPrice, usage);
}

/** A model call's dollars at the price its provider was set to, else the catalog's (see budgetCostUsd). */
export function turnCostUsd(model: { model: string; price?: ModelPrice | undefined }, usage: Usage): number {
  return model.price ? costAt(model.price, usage) : budgetCostUsd(model.model, usage);
}

/** What a usage event adds to a usage event: its dollars, when the provider's price is not the catalog's. */
export function usageCost(model: { price?: ModelPrice | undefined }, usage: Usage): { usd?: number } {
  return model.price ? { usd: costAt(model.price, usage) } : {};
}

/** Dollars a usage event stands for: its own `usd` when it has one, else the catalog's price. */
export function eventCostUsd(event: Usage & { model: string; usd?: number | undefined }): number | undefined {
  return event.usd ?? estimateCostUsd(event.model, event);
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  };
}
