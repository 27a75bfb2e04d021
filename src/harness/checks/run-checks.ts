import type { Sandbox } from '../../../sandbox/sandbox.ts';
import type { KnownCommand } from '../knowledge/knowledge-document.ts';
import type { CheckRun } from './check-store.ts';

const headChars = 2000;
const tailChars = 4000;

/** Runs one command in the sandbox with a time limit and reports it as a check run. Never throws. */
export async function runCheckCommand(
  sandbox: Sandbox,
  input: { commit: string; phase: CheckRun['phase']; command: KnownCommand; timeoutMs: number; signal: AbortSignal },
): Promise<CheckRun> {
  const startedAt = new Date();
  const result = await sandbox.exec(input.command.command, { timeoutMs: input.timeoutMs, signal: input.signal, maxOutputBytes: 512 * 1024 });
  const finishedAt = new Date();
  const log = [result.stdout, result.stderr].filter((s) => s.trim()).join('\n');
  const outcome = result.timedOut ? 'timed-out' : result.exitCode === 0 ? 'passed' : 'failed';
  return {
    commit: input.commit,
    phase: input.phase,
    name: input.command.name,
    command: input.command.command,
    outcome,
    exitCode: result.exitCode,
    durationMs: result.durationMs,
    logHead: log.slice(0, headChars),
    logTail: log.length > headChars ? log.slice(Math.max(headChars, log.length - tailChars)) : '',
    ...(result.timedOut && { reason: `timed out after ${Math.round(input.timeoutMs / 1000)} s` }),
    startedAt,
    finishedAt,
  };
}

/**
 * Why a failed setup command failed, in plain words: no network, a missing tool, or its own error.
 * Its checks are then reported as not run for this reason, never as passed or failed.
 */
export function setupFailureReason(run: CheckRun, refusedHosts: readonly string[] = []): string {
  const log = `${run.logHead}\n${run.logTail}`;
  if (run.outcome === 'timed-out') return `setup \`${run.command}\` timed out`;
  // Tools report a proxy refusal as a plain HTTP error (npm: "403 Forbidden - GET https://host/…"),
  // so a host the egress proxy refused for this session, named in the log, means no network.
  if (refusedHosts.some((host) => log.includes(host))) return `setup \`${run.command}\` could not reach the network`;
  if (/ENOTFOUND|EAI_AGAIN|getaddrinfo|Could not resolve host|Temporary failure in name resolution|network is unreachable|ENETUNREACH|ECONNREFUSED|Failed to establish a new connection|egress proxy|tunneling socket could not be established/i.test(log)) {
    return `setup \`${run.command}\` could not reach the network`;
  }
  if (run.exitCode === 127 || /command not found|not found$/m.test(log)) return `setup \`${run.command}\` needs a tool the sandbox does not have`;
  return `setup \`${run.command}\` failed with exit ${run.exitCode ?? 'none'}`;
}

/** A stable signature of a set of failures, to see the same failures repeat with nothing new. */
export function failureSignature(runs: readonly CheckRun[]): string {
  return runs
    .filter((r) => r.outcome === 'failed' || r.outcome === 'timed-out')
    .map((r) => `${r.command}:${r.exitCode}:${normaliseLog(r.logTail || r.logHead)}`)
    .sort()
    .join('\n');
}

function normaliseLog(log: string): string {
  // Durations, timestamps, hex ids and paths under tmp change between identical failures.
  return log
    .replace(/\d+(\.\d+)?\s?(ms|s)\b/g, '#')
    .replace(/\b\d{2}:\d{2}:\d{2}\b/g, '#')
    .replace(/\b[0-9a-f]{7,40}\b/g, '#')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-20)
    .join('\n');
}

/** The part of a failure the agent needs: command, exit code and the end of its log. */
export function describeFailure(run: CheckRun): string {
  const log = run.logTail || run.logHead;
  return `\`${run.command}\` ${run.outcome === 'timed-out' ? 'timed out' : `exited with ${run.exitCode}`}:\n\`\`\`\n${log.slice(-3000)}\n\`\`\``;
}
