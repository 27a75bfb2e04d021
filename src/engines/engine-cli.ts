import type { RunOutcome } from '../agent/agent-runner.ts';
import { describeError } from '../core/errors.ts';
import type { Sandbox } from '../../sandbox/sandbox.ts';
import type { CliEngineName, EngineResume, EngineRunInput } from './engine.ts';
import type { EngineStreamStep } from './engine-stream.ts';
import {
  askFromEngine,
  type EngineStart,
  engineQuestion,
  lineSplitter,
  openEngineRun,
  recordEngineTurn,
  recordGiven,
} from './engine-transcript.ts';

/** One invocation of an engine's CLI in the sandbox: the shell command, its environment and what it reads on stdin. */
export type CliInvocation = { command: string; env: Record<string, string>; stdin: string };

/** Reads one invocation's stdout: each line as it comes, then how the run ended once the CLI has exited. */
export type CliStreamReader = {
  line(line: string): EngineStreamStep[];
  /** The result when the stream had no closing line of its own (OpenCode), from the exit code. */
  end(exitCode: number): EngineStreamStep | undefined;
  /** The model turn the text streamed now belongs to, where the stream counts turns (else the run's first). */
  turn?(): number;
};

/**
 * What differs between CLI engines: how to run the CLI (fresh, or resuming its own session), how
 * to read its stream, and how it says a session to resume is gone.
 */
export type CliEngineSpec = {
  engine: CliEngineName;
  /** The engine's name in people's words (`Codex`). */
  label: string;
  /** Writes what the CLI reads before it starts (its config and Patchbay's instructions) and says how to run it. */
  prepare(input: EngineRunInput, prompt: string, resume: EngineResume | undefined): Promise<CliInvocation>;
  reader(input: EngineRunInput, firstTurn: number): CliStreamReader;
  lostSession(output: string): boolean;
};

type CliResult =
  | { kind: 'done'; ok: boolean; text: string; resume: EngineResume | undefined }
  | { kind: 'lost-session' }
  | { kind: 'aborted' }
  | { kind: 'crashed'; message: string };

/**
 * Runs a CLI engine for one run of the session: hands it the messages it has not seen (resuming
 * its own session when there is one, or starting over with the whole thread when that session is
 * gone), writes its stream to the session's log as it comes, and ends with the runner's outcome.
 * Must not throw.
 */
export async function runCliEngine(spec: CliEngineSpec, input: EngineRunInput): Promise<RunOutcome> {
  try {
    const start = await openEngineRun(input, spec.engine);
    if (!start.prompt) return { kind: 'finished', summary: await lastSummary(input) };
    await recordGiven(input, start);
    let result = await invoke(spec, input, start, start.resume);
    if (result.kind === 'lost-session')
      result = await invoke(spec, input, { ...start, prompt: start.history }, undefined);
    return await settle(spec, input, result);
  } catch (error) {
    if (input.signal.aborted) return { kind: 'cancelled' };
    input.log.error({ err: error, engine: spec.engine }, 'engine failed');
    return { kind: 'failed', code: 'engine_failed', message: `${spec.label} failed: ${describeError(error)}` };
  }
}

async function invoke(
  spec: CliEngineSpec,
  input: EngineRunInput,
  start: EngineStart,
  resume: EngineResume | undefined,
): Promise<CliResult> {
  const reader = spec.reader(input, start.firstTurn);
  let engineSessionId = resume?.engineSessionId;
  let final: { ok: boolean; text: string } | undefined;
  let writes = Promise.resolve();
  const take = (step: EngineStreamStep | undefined) => {
    if (step?.kind === 'session') engineSessionId = step.engineSessionId;
    else if (step?.kind === 'result') final = { ok: step.ok, text: step.text };
    else if (step?.kind === 'events' && step.events.length > 0) {
      for (const text of step.texts) input.onDelta?.(text, reader.turn?.() ?? start.firstTurn);
      const { events } = step;
      writes = writes.then(() => input.runLog.commitStep(input.sessionId, { events }).then(() => undefined));
    }
  };
  const lines = lineSplitter((line) => {
    for (const step of reader.line(line)) take(step);
  });
  const invocation = await spec.prepare(input, start.prompt, resume);
  const r = await input.sandbox.exec(invocation.command, {
    env: { ...input.relay.env, ...invocation.env },
    stdin: invocation.stdin,
    signal: input.signal,
    timeoutMs: input.maxWallMs,
    maxOutputBytes: 64 * 1024,
    onStdout: (chunk) => lines.push(chunk),
  });
  lines.end();
  if (!final) take(reader.end(r.exitCode ?? -1));
  await writes;
  if (r.aborted || input.signal.aborted) return { kind: 'aborted' };
  if (resume && !final?.ok && spec.lostSession(`${final?.text ?? ''}\n${r.stderr}\n${r.stdout}`))
    return { kind: 'lost-session' };
  if (!final)
    return { kind: 'crashed', message: (r.stderr || r.stdout).trim().slice(-500) || `exit code ${r.exitCode}` };
  const session = engineSessionId ? { engine: spec.engine, engineSessionId } : undefined;
  return { kind: 'done', ...final, resume: session };
}

/** What the CLI's end means for the session: finished, a question for the thread, or a failure. */
async function settle(spec: CliEngineSpec, input: EngineRunInput, result: CliResult): Promise<RunOutcome> {
  switch (result.kind) {
    case 'aborted':
      return { kind: 'cancelled' };
    case 'lost-session':
      return { kind: 'failed', code: 'engine_failed', message: `${spec.label} could not resume its session` };
    case 'crashed':
      return {
        kind: 'failed',
        code: 'engine_failed',
        message: `${spec.label} ended without a result: ${result.message}`,
      };
    case 'done': {
      await recordEngineTurn(input, result.resume, result.text);
      if (!result.ok) return { kind: 'failed', code: 'engine_failed', message: `${spec.label} failed: ${result.text}` };
      const question = engineQuestion(result.text);
      if (question)
        return askFromEngine(input, question, `${result.resume?.engineSessionId ?? spec.engine}:${Date.now()}`);
      return { kind: 'finished', summary: result.text };
    }
    default: {
      const _never: never = result;
      return _never;
    }
  }
}

async function lastSummary(input: EngineRunInput): Promise<string> {
  const entries = await input.runLog.transcript(input.sessionId);
  const last = entries.findLast((e) => e.message.role === 'assistant')?.message;
  return last?.role === 'assistant' ? (last.content ?? '') : '';
}

/** The CLI's `--version` in the sandbox (`env` keeps it offline where the CLI needs telling). */
export async function cliVersion(
  label: string,
  cliPath: string,
  sandbox: Sandbox,
  signal: AbortSignal,
  env: Record<string, string> = {},
): Promise<string> {
  const r = await sandbox.exec(`"$PATCHBAY_ENGINE_CLI" --version`, {
    env: { ...env, PATCHBAY_ENGINE_CLI: cliPath },
    signal,
    timeoutMs: 60_000,
  });
  if (r.exitCode !== 0) throw new Error(`${label} --version failed: ${(r.stderr || r.stdout).trim().slice(0, 300)}`);
  return r.stdout.trim();
}

/** Where an engine keeps its own state (sessions, config) in the workspace: inside .git, so it lasts as long as the workspace and is never committed. */
export function engineStateDir(workdir: string, engine: CliEngineName): string {
  return `${workdir}/.git/patchbay-engines/${engine}`;
}

/** Patchbay's instructions for the engine: the run's system text, the repository's knowledge, and how to ask. */
export function engineInstructions(input: EngineRunInput, askGuidance: string): string {
  return [input.system, ...(input.knowledge ? [input.knowledge] : []), askGuidance].join('\n\n');
}
