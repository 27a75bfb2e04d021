import type { ExecOptions, ExecResult, Sandbox } from '../../../sandbox/sandbox.ts';
import { maskLogNoise } from '../../core/log-noise.ts';
import { quoteUntrusted } from '../../core/quote-untrusted.ts';
import type { KnownCommand } from '../knowledge/knowledge-document.ts';
import type { CheckRun } from './check-store.ts';

const headChars = 2000;
const tailChars = 4000;

type Exec = (
  command: string,
  options: Pick<ExecOptions, 'timeoutMs' | 'signal' | 'maxOutputBytes'> & { timeoutMs: number; signal: AbortSignal },
) => Promise<ExecResult>;

/**
 * Runs one command with a time limit and reports it as a check run. Never throws. `sandbox` runs it
 * in the workspace root; pass a checkout's `exec` to run it in the checkout of the judged commit.
 */
export async function runCheckCommand(
  sandbox: Sandbox | { exec: Exec },
  input: { commit: string; phase: CheckRun['phase']; command: KnownCommand; timeoutMs: number; signal: AbortSignal },
): Promise<CheckRun> {
  const startedAt = new Date();
  const result = await sandbox.exec(input.command.command, {
    timeoutMs: input.timeoutMs,
    signal: input.signal,
    maxOutputBytes: 512 * 1024,
  });
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
  if (
    /ENOTFOUND|EAI_AGAIN|getaddrinfo|Could not resolve host|Temporary failure in name resolution|network is unreachable|ENETUNREACH|ECONNREFUSED|Failed to establish a new connection|egress proxy|tunneling socket could not be established/i.test(
      log,
    )
  ) {
    return `setup \`${run.command}\` could not reach the network`;
  }
  if (run.exitCode === 127 || /command not found|not found$/m.test(log)) {
    const tool = missingCommand(run);
    return tool
      ? `setup \`${run.command}\` needs \`${tool}\`, which the sandbox does not have`
      : `setup \`${run.command}\` needs a tool the sandbox does not have`;
  }
  return `setup \`${run.command}\` failed with exit ${run.exitCode ?? 'none'}`;
}

/**
 * The command a shell could not find, read from the log (`sh: 1: vitest: not found`, `bash: line
 * 1: jest: command not found`, `env: 'node': No such file or directory`): exit 127 behind `npm test`
 * is the tool npm's script runs, not npm.
 */
export function missingCommand(run: Pick<CheckRun, 'logHead' | 'logTail'>): string | undefined {
  const log = `${run.logHead}\n${run.logTail}`;
  const found =
    /(?:^|\n)\S*sh: (?:\d+: )?(?:line \d+: )?([^\s:]+): (?:command )?not found/.exec(log) ??
    /(?:^|\n)([^\s:]+): command not found/.exec(log) ??
    /(?:^|\n)(?:\/usr\/bin\/)?env: ['‘"]?([^\s:'’"]+)['’"]?: No such file or directory/.exec(log);
  return found?.[1];
}

/** Why a check that exited with 127 did not run, naming the command that is missing. */
export function missingCommandReason(run: CheckRun): string {
  const tool = missingCommand(run);
  return tool
    ? `\`${tool}\` is not installed in the sandbox (\`${run.command}\` exited with 127)`
    : `\`${run.command}\` exited with 127: a command it runs was not found`;
}

/** A stable signature of a set of failures, to see the same failures repeat with nothing new. */
export function failureSignature(runs: readonly CheckRun[]): string {
  return runs
    .filter((r) => r.outcome === 'failed' || r.outcome === 'timed-out')
    .map((r) => `${r.command}:${r.exitCode}:${normaliseLog(r.logTail || r.logHead)}`)
    .sort()
    .join('\n');
}

/**
 * What stays the same when the same failure repeats: the log without its noise (maskLogNoise), cut
 * to the lines that say what failed and the end.
 */
export function normaliseLog(log: string): string {
  const lines = maskLogNoise(log);
  // The lines that say what failed (a stack trace's end is the same for many different failures),
  // then the end of the log.
  const telling = lines
    .filter((l) => /error|exception|assert|fail|cannot|expected|not found|panic/i.test(l))
    .slice(0, 10);
  return [...telling, '…', ...lines.slice(-20)].join('\n');
}

/**
 * The part of a failure the agent needs: command, exit code and the end of its log, quoted as the
 * check's output (a log can hold any text, a code fence's end included: it is data, not instructions).
 */
export function describeFailure(run: CheckRun): string {
  const log = run.logTail || run.logHead;
  const status = `\`${run.command}\` ${run.outcome === 'timed-out' ? 'timed out' : `exited with ${run.exitCode}`}`;
  return `${status}:\n${quoteUntrusted({ what: `The output of \`${run.command}\``, author: "the repository's code and tests", body: log.slice(-3000) })}`;
}
