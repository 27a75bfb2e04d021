import type { RunLimits, RunOutcome } from '../agent/agent-runner.ts';
import type { CliEngineName, Engine, EngineName } from '../engines/engine.ts';
import { engineLabel } from '../engines/engine-choice.ts';
import type { EngineRelay } from '../engines/relay-lease.ts';
import { createEngineGate } from '../engines/engine-gate.ts';
import type { ToolContext } from '../agent/tool.ts';
import type { SessionRun } from './session-run.ts';
import { describeError } from '../core/errors.ts';

/** The engines a session may run and the relay their model traffic goes through (see docs/engines.md). */
export type EngineDeps = {
  /** AGENT_ENGINE: the installation's engine when neither the request nor the repository names one. */
  default: EngineName;
  /** The engines this installation has set up; a session that names another fails with the reason. */
  engines: Partial<Record<CliEngineName, Engine>>;
  relay: EngineRelay;
};

/**
 * One round of an engine in the session's workspace: a relay lease for its model traffic (the
 * credential stays on the host; its usage is metered into the log; a spent budget or a stop ends
 * forwarding, as do the run's token and tool-call limits), the engine run, then the lease revoked. A
 * limit the relay stopped at is the round's outcome, so the harness settles it as it does for its own
 * loop: a spent budget pauses the session with the reason, a token or tool-call limit ends the run.
 */
export async function runEngineRound(
  run: SessionRun,
  engines: EngineDeps,
  name: CliEngineName,
  input: {
    system: string;
    limits: Partial<RunLimits>;
    /** The session's approval rules and autonomy, which gate the engine's commands as they gate Patchbay's loop. */
    approvals: ToolContext['approvals'];
    approvalTimeoutMs: number;
    onDelta?: (text: string, turn: number) => void;
  },
): Promise<RunOutcome> {
  const { session, deps, sandbox, signal, log } = run;
  const engine = engines.engines[name];
  if (!engine)
    return {
      kind: 'failed',
      code: 'engine_unavailable',
      message: `${engineLabel(name)} is not set up on this Patchbay (see docs/engines.md); ask without "with ${name}:" to use the default engine`,
    };
  const firstTurn = (await deps.store.events(session.id, { types: ['usage'] })).length;
  const gate = createEngineGate({
    sessionId: session.id,
    sandbox,
    runLog: deps.store,
    approvals: input.approvals,
    approvalTimeoutMs: input.approvalTimeoutMs,
    signal,
    log: log.child({ engine: name, component: 'engine-gate' }),
  });
  let lease: ReturnType<EngineRelay['open']>;
  try {
    lease = engines.relay.open({
      sessionId: session.id,
      engine: name,
      api: engine.api,
      firstTurn,
      maxCostUsd: input.limits.maxCostUsd ?? Number.POSITIVE_INFINITY,
      ...(input.limits.maxTokens !== undefined && { maxTokens: input.limits.maxTokens }),
      ...(input.limits.maxToolCalls !== undefined && { maxToolCalls: input.limits.maxToolCalls }),
      signal,
      gate,
    });
  } catch (error) {
    return {
      kind: 'failed',
      code: 'engine_unavailable',
      message: `${engineLabel(name)} cannot run here: ${describeError(error)}`,
    };
  }
  try {
    const outcome = await engine.run({
      sessionId: session.id,
      sandbox,
      system: input.system,
      runLog: deps.store,
      relay: lease.access,
      signal,
      log: log.child({ engine: name }),
      maxWallMs: input.limits.maxWallMs ?? 60 * 60_000,
      ...(input.onDelta && { onDelta: input.onDelta }),
    });
    const stopped = lease.stopped();
    if (stopped && outcome.kind !== 'cancelled') return stopped;
    if (outcome.kind === 'finished')
      return { ...outcome, summary: `${outcome.summary.trim()}\n\nEngine: ${engineLabel(name)}` };
    return outcome;
  } finally {
    lease.close();
    await gate.close();
  }
}
