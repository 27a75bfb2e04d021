import type { ModelProvider } from '../../models/model-provider.ts';
import type { CheckStore } from '../checks/check-store.ts';
import type { KnowledgeStore } from '../knowledge/knowledge-store.ts';

/** What the harness's gates need: stores for knowledge, checks and verdicts, the verifier model, limits. */
export type GateDeps = {
  knowledge: KnowledgeStore;
  checks: CheckStore;
  /** The independent verifier's model; the main model unless configured separately. */
  verifier: ModelProvider;
  /** Time limit of one setup or check command. */
  checkTimeoutMs: number;
  /** Check-fix rounds per request before the session asks people (default 5). */
  maxCheckRounds?: number;
  /** Budgets of one session before it pauses and asks (before the task class's share). */
  maxCostUsd: number;
  maxMinutes: number;
};
