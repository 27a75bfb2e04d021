import { estimateCostUsd } from '../models/model-catalog.ts';
import type { Usage } from '../models/model-provider.ts';

export type ModelCost = { model: string; usage: Usage; usd: number | null };
/** `usd` is null when any model that was used has no known price: a partial sum would understate it. */
export type SessionCost = { usd: number | null; byModel: ModelCost[] };

/** The session's estimated cost at list prices, from its tokens summed per model. */
export function sessionCost(perModel: readonly { model: string; usage: Usage }[]): SessionCost {
  const byModel = perModel.map(({ model, usage }) => ({ model, usage, usd: estimateCostUsd(model, usage) ?? null }));
  const usd = byModel.every((m) => m.usd !== null) ? byModel.reduce((sum, m) => sum + (m.usd ?? 0), 0) : null;
  return { usd, byModel };
}
