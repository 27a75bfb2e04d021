import type { Logger } from 'pino';
import type { Sandbox } from '../../../sandbox/sandbox.ts';
import type { ApprovalRules } from '../../core/approval-rules.ts';
import type { RunLog } from '../../core/run-log.ts';
import type { ModelProvider } from '../../models/model-provider.ts';
import type { CheckStore } from '../checks/check-store.ts';
import type { SetupDigests } from '../checks/commit-checkout.ts';
import type { KnowledgeStore } from '../knowledge/knowledge-store.ts';
import type { LoadedKnowledge } from '../knowledge/load-knowledge.ts';
import type { ScoutPasses } from '../knowledge/scout-passes.ts';

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
  /** Reads a repository's recent pull requests for its unwritten rules; none without a GitHub App. */
  scout?: ScoutPasses;
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
  /** Where the gate takes its evidence from and runs its checks: never the agent's workspace. */
  evidence: EvidenceSource;
  log: Logger;
  signal: AbortSignal;
};

/**
 * What the gate needs to judge a commit outside the agent's reach: the host's data directory and
 * the session's repository (its evidence repository borrows the mirror's objects), the agent's
 * workspace on the host (local sandboxes) to take the commit's bundle from, and a sandbox of the
 * checks' own, which never mounts the agent's workspace.
 */
export type EvidenceSource = {
  dataDir: string;
  repo: string;
  workspaceDir?: string | undefined;
  /** A sandbox for the checks (its own workspace); the caller releases it. */
  checkSandbox(): Promise<Sandbox>;
  /** Where the checks' sandbox shows the mirror's objects, when it does (a thin bundle is enough then). */
  sharedObjects?: string | undefined;
  /** Digests of the checks' setup outputs, taken when setup made them (per run, on the host). */
  setupDigests: SetupDigests;
};
