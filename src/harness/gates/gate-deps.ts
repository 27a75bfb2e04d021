import type { Logger } from 'pino';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import type { ApprovalRules } from '../../core/approval-rules.ts';
import type { RunLog } from '../../core/run-log.ts';
import type { ModelProvider } from '../../models/model-provider.ts';
import type { CheckStore } from '../checks/check-store.ts';
import type { KnowledgeStore } from '../knowledge/knowledge-store.ts';
import type { LoadedKnowledge } from '../knowledge/load-knowledge.ts';

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

/** One session's gates: where they record, what they run in, and the repository knowledge they judge by. */
export type GateContext = {
  sessionId: string;
  store: RunLog;
  gates: GateDeps;
  sandbox: Sandbox;
  knowledge: LoadedKnowledge | undefined;
  knowledgeText: string;
  /** The approval rules setup and check commands meet (installation, then repository): see unattendedRefusal. */
  approvalRules?: readonly ApprovalRules[];
  /** The commit the session's branch started from: a workspace still there, untouched, may become a setup image. */
  baseCommit?: string;
  log: Logger;
  signal: AbortSignal;
};
