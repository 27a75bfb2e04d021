import type { Logger } from 'pino';
import { z } from 'zod';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { RunnerLog, RunOutcome } from '../agent/agent-runner.ts';

/**
 * How a session's agent runs: Patchbay's own tool loop (`patchbay`, the default), or an engine's
 * official CLI in the session's sandbox. The installation's default is AGENT_ENGINE; a
 * repository's knowledge document and the request ("@patchbay with codex: …") choose per session.
 */
export const EngineName = z.enum(['patchbay', 'claude-code', 'codex', 'opencode']);
export type EngineName = z.infer<typeof EngineName>;

/** An engine that runs a CLI in the sandbox (every engine but Patchbay's own loop). */
export type CliEngineName = Exclude<EngineName, 'patchbay'>;

/** The wire format an engine's model traffic speaks, which sets the provider the relay forwards to. */
export type RelayApi = 'anthropic' | 'openai';

/**
 * The relay as the engine inside the sandbox sees it. The token is worthless outside this run: the
 * relay swaps it for the real credential on the host, so no credential enters the sandbox.
 */
export type RelayAccess = {
  /** Base URL of the relay as reached from inside the sandbox (ANTHROPIC_BASE_URL, OPENAI_BASE_URL). */
  baseUrl: string;
  /** The run's relay token, sent where the engine sends its API key. */
  token: string;
  /** The model the engine asks for (the configured provider's model). */
  model: string;
  /** Extra environment the engine's proxy settings need inside the sandbox (NO_PROXY for the relay, …). */
  env: Record<string, string>;
};

/**
 * The engine's own session, saved in the transcript (an assistant message's `providerState`) so a
 * rework, an answered question or another worker resumes it instead of starting over.
 */
export const EngineResume = z.object({ engine: EngineName, engineSessionId: z.string().min(1) });
export type EngineResume = z.infer<typeof EngineResume>;

/**
 * What one engine run is given. The engine writes each step to `runLog` as the runner does:
 * people's messages it hands the engine go into the transcript with their event seq (so they
 * count as read), its text as `assistant-message` events, its commands, edits and other tool uses
 * as `tool-start`/`tool-end` events (dedupe keys from the engine's own ids), and its last
 * assistant message carries the EngineResume as `providerState`. Usage is not the engine's to
 * write: the relay meters it from the model's answers.
 */
export type EngineRunInput = {
  sessionId: string;
  sandbox: Sandbox;
  /** Patchbay's instructions for the run (system prompt, guidance), appended to the engine's own. */
  system: string;
  /**
   * The repository's knowledge as text, which the engine hands over in its own format
   * (CLAUDE.md, AGENTS.md) without overwriting the repository's files.
   */
  knowledge?: string | undefined;
  runLog: RunnerLog;
  relay: RelayAccess;
  /** Aborting ends the engine's whole process tree within seconds; the outcome is then `cancelled`. */
  signal: AbortSignal;
  log: Logger;
  /** Wall time this run may take. */
  maxWallMs: number;
  /** The model's text as it streams, with the turn it belongs to. Must not throw. */
  onDelta?: (text: string, turn: number) => void;
};

/**
 * An engine: runs the session's agent in its sandbox and ends with the same outcome as `runAgent`,
 * so the harness around it (knowledge, setup, checks, verifier and rework, gate, push, PR,
 * replies) is the same for every engine. Must not throw: failures are a `failed` outcome.
 * A run ended by the relay (budget spent) returns what `relayStop` says.
 */
export interface Engine {
  readonly name: CliEngineName;
  /** The wire format its model traffic speaks. */
  readonly api: RelayApi;
  run(input: EngineRunInput): Promise<RunOutcome>;
  /** The engine's installed version, as its CLI reports it from inside `sandbox` (for doctor). */
  version(sandbox: Sandbox, signal: AbortSignal): Promise<string>;
}
