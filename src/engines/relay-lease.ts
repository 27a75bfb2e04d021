import type { RunOutcome } from '../agent/agent-runner.ts';
import type { CliEngineName, RelayAccess, RelayApi } from './engine.ts';
import type { EngineGate } from './engine-gate.ts';

/** What a run asks of the relay: who it is for, which wire format, and when to stop forwarding. */
export type RelayRequest = {
  sessionId: string;
  /** The engine whose calls these are: the relay forwards only the API paths its CLI needs. */
  engine: CliEngineName;
  api: RelayApi;
  /** The turn numbers the relay's usage events start from (those already in the log). */
  firstTurn: number;
  /** Dollars this run may spend at list prices; the relay refuses to forward past it. */
  maxCostUsd: number;
  /** RUN_MAX_TOKENS: metered input and output tokens past which the relay stops forwarding (unset: no limit). */
  maxTokens?: number;
  /** RUN_MAX_TOOL_CALLS: tool calls in the model's metered answers at which the relay stops forwarding (unset: no limit). */
  maxToolCalls?: number;
  /** Aborting (a stop) makes the relay refuse every further request of the run at once. */
  signal: AbortSignal;
  /** The run's gate for its engine's commands, asked by the engine's permission hook (POST /gate); absent: no gate. */
  gate?: EngineGate | undefined;
};

/**
 * One run's lease on the relay. While it is open the token in `access` forwards; `close` revokes it.
 * `stopped` says why the relay stopped forwarding (budget spent, token or tool-call limit reached), as
 * the run's outcome.
 */
export type RelayLease = {
  access: RelayAccess;
  stopped(): Extract<RunOutcome, { kind: 'failed' }> | undefined;
  /** Dollars, tokens and the model's tool calls metered so far. */
  spent(): { costUsd: number; inputTokens: number; outputTokens: number; calls: number; toolCalls: number };
  close(): void;
};

/** The host's relay for engines' model traffic: credentials added here, tokens metered here. */
export interface EngineRelay {
  open(request: RelayRequest): RelayLease;
}
