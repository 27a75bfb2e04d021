import type { ExecOptions } from '../sandbox.ts';
import type { ModalSandboxLike } from './modal-client.ts';
import { runModalExec, type ModalExecOutput } from './modal-exec.ts';
import type { RunInSandbox } from './modal-files.ts';

const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** Runs argv (a file operation's script) in the sandbox with the workspace as its directory. */
export function argvExec(
  sandbox: ModalSandboxLike,
  args: string[],
  opts: Parameters<RunInSandbox>[1],
  at: { workdir: string; sandboxEnded: Promise<string> },
): Promise<ModalExecOutput> {
  return runModalExec(sandbox, {
    args,
    workdir: at.workdir,
    env: { LANG: 'C.UTF-8' },
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxOutputBytes: opts.maxOutputBytes,
    sandboxEnded: at.sandboxEnded,
    ...(opts.stdin && { stdin: opts.stdin }),
  });
}

/** Runs `command` with `sh -c` in the sandbox as `opts` ask (its env already checked). */
export function shellExec(
  sandbox: ModalSandboxLike,
  command: string,
  opts: ExecOptions,
  at: { workdir: string; sandboxEnded: Promise<string> },
): Promise<ModalExecOutput> {
  return runModalExec(sandbox, {
    args: ['sh', '-c', command],
    workdir: at.workdir,
    env: { LANG: 'C.UTF-8', ...opts.env },
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxOutputBytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    sandboxEnded: at.sandboxEnded,
    ...(opts.signal && { signal: opts.signal }),
    ...(opts.stdin !== undefined && { stdin: Buffer.from(opts.stdin, 'utf8') }),
    ...(opts.onStdout && { onStdout: opts.onStdout }),
  });
}
