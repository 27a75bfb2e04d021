import { z } from 'zod';
import type { ExecResult } from '../../sandbox/sandbox.ts';
import { gateCommand } from './command-gate.ts';
import { checkCommand } from './command-policy.ts';
import type { CommandPolicy } from './command-policy.ts';
import { capText, DEFAULT_MAX_OUTPUT_CHARS } from './output-cap.ts';
import type { Tool } from './tool.ts';

export type ShellToolOptions = {
  policy?: CommandPolicy | undefined;
  /** Timeout when the call names none. */
  timeoutMs?: number | undefined;
  /** Ceiling for the timeout a call may ask for. */
  maxTimeoutMs?: number | undefined;
  /** Characters of stdout and stderr together handed back to the model. */
  maxOutputChars?: number | undefined;
};

const ShellInput = z.object({
  command: z.string().min(1).describe('The command line, run with sh -c in the workspace root.'),
  timeout: z.number().int().min(1).max(86_400).optional().describe('Timeout in seconds.'),
});
type ShellInput = z.infer<typeof ShellInput>;

export function createShellTool(options: ShellToolOptions = {}): Tool<ShellInput> {
  const policy = options.policy ?? checkCommand;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const maxTimeoutMs = Math.max(timeoutMs, options.maxTimeoutMs ?? 10 * 60_000);
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  return {
    name: 'run_shell',
    description:
      'Run a shell command in the workspace (sh -c, working directory = workspace root; network, if any, only through the HTTP(S) proxy in HTTP_PROXY to allowed hosts such as package registries; others answer 403). ' +
      `Returns the exit code, stdout and stderr. Default timeout ${timeoutMs / 1000}s, at most ${maxTimeoutMs / 1000}s. ` +
      'git push, publishing, sudo and destructive system commands are refused; the harness commits, pushes and opens the pull request.',
    inputSchema: ShellInput,
    // The command's own timeout kills it; the registry's limit is only a backstop past that.
    timeLimitMs: (input) =>
      Math.min(input.timeout === undefined ? timeoutMs : input.timeout * 1000, maxTimeoutMs) + 30_000,
    async execute(input, ctx) {
      const gate = await gateCommand(input.command, ctx, policy, 'Command');
      if (gate.kind === 'held') return gate.output;
      const timeout = Math.min(input.timeout === undefined ? timeoutMs : input.timeout * 1000, maxTimeoutMs);
      const result = await ctx.sandbox.exec(input.command, {
        timeoutMs: timeout,
        signal: ctx.signal,
        ...(gate.publishing && { secretWrites: true }),
      });
      return {
        content: formatResult(result, timeout, Math.min(maxOutputChars, ctx.maxOutputChars ?? maxOutputChars)),
        isError: result.exitCode !== 0,
      };
    },
  };
}

function formatResult(result: ExecResult, timeoutMs: number, maxChars: number): string {
  const head = result.aborted
    ? 'Command aborted: the run was stopped and the command was killed.'
    : result.limit
      ? `Sandbox limit reached: ${result.limit.message}. Exit code: ${result.exitCode ?? 'none (killed)'}`
      : result.timedOut
        ? `Command timed out after ${timeoutMs / 1000}s and was killed. Pass a larger timeout, or run it in the background with output to a file.`
        : `Exit code: ${result.exitCode ?? 'none (killed by a signal)'}`;
  const hint = 'redirect the output to a file and read parts of it with read_file or search';
  const dropped = (name: string, bytes: number) =>
    bytes > 0 ? `\n[... a further ${bytes} bytes of ${name} were not captured; ${hint} ...]` : '';
  const shown = (text: string, bytes: number) => text !== '' || bytes > 0;
  // The whole answer stays within maxChars (so nothing cuts it again): the streams share what the
  // head, their labels and notes leave, each half of it plus whatever the other leaves unused.
  const overhead =
    head.length +
    (shown(result.stdout, result.truncatedBytes.stdout)
      ? '\nstdout:\n'.length + dropped('stdout', result.truncatedBytes.stdout).length
      : 0) +
    (shown(result.stderr, result.truncatedBytes.stderr)
      ? '\nstderr:\n'.length + dropped('stderr', result.truncatedBytes.stderr).length
      : 0);
  const streams = Math.max(0, maxChars - overhead);
  const half = Math.floor(streams / 2);
  const outBudget = Math.max(half, streams - result.stderr.length);
  const errBudget = Math.max(half, streams - result.stdout.length);
  const section = (name: string, text: string, budget: number, bytes: number) =>
    shown(text, bytes) ? `${name}:\n${capText(text, budget, hint)}${dropped(name, bytes)}` : '';
  const parts = [
    head,
    section('stdout', result.stdout, outBudget, result.truncatedBytes.stdout),
    section('stderr', result.stderr, errBudget, result.truncatedBytes.stderr),
  ];
  return parts.filter((p) => p !== '').join('\n');
}
