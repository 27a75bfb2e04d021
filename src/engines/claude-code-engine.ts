import type { RunOutcome } from '../agent/agent-runner.ts';
import { describeError } from '../core/errors.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import { type ClaudeStreamState, translateClaudeLine } from './claude-stream.ts';
import type { Engine, EngineResume, EngineRunInput } from './engine.ts';
import {
  askFromEngine,
  type EngineStart,
  engineAskGuidance,
  engineQuestion,
  lineSplitter,
  openEngineRun,
  recordEngineTurn,
  recordGiven,
} from './engine-transcript.ts';

/**
 * Where Claude Code keeps its sessions (for --resume): inside the workspace's .git, so it lasts as
 * long as the workspace, travels with its checkpoints on Modal, and is never committed.
 */
const CONFIG_DIR = '.git/patchbay-engines/claude';

/** Variables that keep the CLI offline but for its model calls (no telemetry, update checks or error reports). */
export const claudeOfflineEnv: Record<string, string> = {
  DISABLE_TELEMETRY: '1',
  DISABLE_ERROR_REPORTING: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_BUG_COMMAND: '1',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  // The sandbox is the boundary: the CLI runs without its own permission prompts (nobody could answer them).
  IS_SANDBOX: '1',
};

/** The Claude Code engine: `claude -p --output-format stream-json` in the session's sandbox, its model traffic through the relay. */
export function createClaudeCodeEngine(options: { cliPath: string }): Engine {
  return {
    name: 'claude-code',
    api: 'anthropic',
    run: (input) => runClaudeCode(options.cliPath, input),
    version: (sandbox, signal) => claudeVersion(options.cliPath, sandbox, signal),
  };
}

async function claudeVersion(cliPath: string, sandbox: Sandbox, signal: AbortSignal): Promise<string> {
  const r = await sandbox.exec(`"$PATCHBAY_CLAUDE" --version`, {
    env: { PATCHBAY_CLAUDE: cliPath, ...claudeOfflineEnv },
    signal,
    timeoutMs: 60_000,
  });
  if (r.exitCode !== 0) throw new Error(`claude --version failed: ${(r.stderr || r.stdout).trim().slice(0, 300)}`);
  return r.stdout.trim();
}

/** One run: hand the engine the unread messages (resuming its session when there is one) and translate its stream. */
async function runClaudeCode(cliPath: string, input: EngineRunInput): Promise<RunOutcome> {
  try {
    const start = await openEngineRun(input, 'claude-code');
    if (!start.prompt) return { kind: 'finished', summary: await lastSummary(input) };
    await recordGiven(input, start);
    let result = await runCli(cliPath, input, start, start.resume);
    // The engine's session is gone (a new workspace after a crash elsewhere): start over with the whole thread.
    if (result.kind === 'lost-session')
      result = await runCli(cliPath, input, { ...start, prompt: start.history }, undefined);
    return await settleCli(input, result);
  } catch (error) {
    if (input.signal.aborted) return { kind: 'cancelled' };
    input.log.error({ err: error }, 'claude-code engine failed');
    return { kind: 'failed', code: 'engine_failed', message: `Claude Code failed: ${describeError(error)}` };
  }
}

type CliResult =
  | { kind: 'done'; ok: boolean; text: string; resume: EngineResume | undefined }
  | { kind: 'lost-session' }
  | { kind: 'aborted' }
  | { kind: 'crashed'; message: string };

/** Runs the CLI once in the sandbox; its stream is written to the session's log as it comes. */
async function runCli(
  cliPath: string,
  input: EngineRunInput,
  start: EngineStart,
  resume: EngineResume | undefined,
): Promise<CliResult> {
  const { sandbox, relay, signal } = input;
  const state: ClaudeStreamState = { turn: start.firstTurn, tools: new Map(), now: Date.now };
  let engineSessionId = resume?.engineSessionId;
  let final: { ok: boolean; text: string } | undefined;
  let writes = Promise.resolve();
  const lines = lineSplitter((line) => {
    const step = translateClaudeLine(line, state);
    if (step.kind === 'session') engineSessionId = step.engineSessionId;
    else if (step.kind === 'result') final = { ok: step.ok, text: step.text };
    else if (step.kind === 'events' && step.events.length > 0) {
      for (const text of step.texts) input.onDelta?.(text, state.turn - 1);
      const events = step.events;
      writes = writes.then(() => input.runLog.commitStep(input.sessionId, { events }).then(() => undefined));
    }
  });
  // The instructions go in through a file, so no argv (the host's process list) holds them.
  const command = [
    `mkdir -p "$CLAUDE_CONFIG_DIR" && printf '%s' "$PATCHBAY_ENGINE_SYSTEM" > "$CLAUDE_CONFIG_DIR/patchbay-system.md"`,
    `&& unset PATCHBAY_ENGINE_SYSTEM && exec "$PATCHBAY_CLAUDE" -p --output-format stream-json --verbose`,
    `--model "$PATCHBAY_ENGINE_MODEL" --dangerously-skip-permissions --append-system-prompt-file "$CLAUDE_CONFIG_DIR/patchbay-system.md"`,
    resume ? `--resume "$PATCHBAY_ENGINE_RESUME"` : '',
  ].join(' ');
  const r = await sandbox.exec(command, {
    env: {
      ...claudeOfflineEnv,
      ...relay.env,
      PATCHBAY_CLAUDE: cliPath,
      PATCHBAY_ENGINE_MODEL: relay.model,
      PATCHBAY_ENGINE_SYSTEM: engineSystem(input),
      ...(resume && { PATCHBAY_ENGINE_RESUME: resume.engineSessionId }),
      ANTHROPIC_BASE_URL: relay.baseUrl,
      ANTHROPIC_API_KEY: relay.token,
      CLAUDE_CONFIG_DIR: `${sandbox.workdir}/${CONFIG_DIR}`,
    },
    stdin: start.prompt,
    signal,
    timeoutMs: input.maxWallMs,
    maxOutputBytes: 64 * 1024,
    onStdout: (chunk) => lines.push(chunk),
  });
  lines.end();
  await writes;
  if (r.aborted || signal.aborted) return { kind: 'aborted' };
  if (resume && !final && /no conversation found/i.test(r.stderr + r.stdout)) return { kind: 'lost-session' };
  if (!final)
    return { kind: 'crashed', message: (r.stderr || r.stdout).trim().slice(-500) || `exit code ${r.exitCode}` };
  return { kind: 'done', ...final, resume: engineSessionId ? { engine: 'claude-code', engineSessionId } : undefined };
}

/** What the CLI's end means for the session: finished, a question for the thread, or a failure. */
async function settleCli(input: EngineRunInput, result: CliResult): Promise<RunOutcome> {
  switch (result.kind) {
    case 'aborted':
      return { kind: 'cancelled' };
    case 'lost-session':
      return { kind: 'failed', code: 'engine_failed', message: 'Claude Code could not resume its session' };
    case 'crashed':
      return {
        kind: 'failed',
        code: 'engine_failed',
        message: `Claude Code ended without a result: ${result.message}`,
      };
    case 'done': {
      await recordEngineTurn(input, result.resume, result.text);
      if (!result.ok) return { kind: 'failed', code: 'engine_failed', message: `Claude Code failed: ${result.text}` };
      const question = engineQuestion(result.text);
      if (question)
        return askFromEngine(input, question, `${result.resume?.engineSessionId ?? 'claude'}:${Date.now()}`);
      return { kind: 'finished', summary: result.text };
    }
    default: {
      const _never: never = result;
      return _never;
    }
  }
}

/** Patchbay's instructions and the repository's knowledge, appended to Claude Code's own system prompt (its CLAUDE.md stays as it is). */
function engineSystem(input: EngineRunInput): string {
  return [input.system, ...(input.knowledge ? [input.knowledge] : []), engineAskGuidance].join('\n\n');
}

async function lastSummary(input: EngineRunInput): Promise<string> {
  const entries = await input.runLog.transcript(input.sessionId);
  const last = entries.findLast((e) => e.message.role === 'assistant')?.message;
  return last?.role === 'assistant' ? (last.content ?? '') : '';
}
