import type { StoredEvent } from '../core/events.ts';
import { addUsage, estimateCostUsd } from '../models/model-catalog.ts';
import { zeroUsage, type Usage } from '../models/model-provider.ts';

export type ModelCost = { model: string; usage: Usage; usd: number | null };
/** `usd` is null when any model that was used has no known price: a partial sum would understate it. */
export type SessionCost = { usd: number | null; byModel: ModelCost[] };

/** The session's estimated cost at list prices, from its per-turn 'usage' events, summed per model. */
export function sessionCost(events: readonly StoredEvent[]): SessionCost {
  const perModel = new Map<string, Usage>();
  for (const { event } of events) {
    if (event.type !== 'usage') continue;
    const { model, inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens } = event;
    perModel.set(model, addUsage(perModel.get(model) ?? zeroUsage, { inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens }));
  }
  const byModel = [...perModel].map(([model, usage]) => ({ model, usage, usd: estimateCostUsd(model, usage) ?? null }));
  const usd = byModel.every((m) => m.usd !== null) ? byModel.reduce((sum, m) => sum + (m.usd ?? 0), 0) : null;
  return { usd, byModel };
}
