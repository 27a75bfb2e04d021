import { spawn, type ChildProcess } from 'node:child_process';
import { PatchbayError } from '../src/core/errors.ts';
import type { ExecResult } from './sandbox.ts';

export type RunProcessInput = {
  file: string;
  args: readonly string[];
  /** The caller's working directory when absent. */
  cwd?: string;
  env: Record<string, string>;
  /** No time limit when absent (the signal still ends it). */
  timeoutMs?: number;
  maxOutputBytes: number;
  /**
   * Kill what the main process left running in its group when it exits (default), since background
   * children would keep the pipes open; false leaves them (git's background maintenance).
   */
  killGroupOnExit?: boolean;
  /** Which end of stderr is kept past maxOutputBytes: the head (default) or the tail (where a failing tool's reason is). */
  stderrKeeps?: 'head' | 'tail';
  signal?: AbortSignal;
  stdin?: string;
  /** Contents of extra descriptors 3, 4, …: pipes the child reads to their end (bubblewrap's `--args FD` and kin). */
  extraFds?: readonly Buffer[];
  /** Program name the child sees as argv[0]. */
  argv0?: string;
  /** Called with each chunk of stdout as it arrives. Must not throw. */
  onStdout?: (chunk: Uint8Array) => void;
  /** Called once the child runs, with a way to end its whole tree (the limit watch uses it). */
  onSpawn?: (pid: number, kill: () => void) => void;
};

/** After the main process exits, how long stragglers holding stdout/stderr open may keep them. */
const CLOSE_GRACE_MS = 2_000;

/** Keeps the head (or the tail) of a stream up to a byte limit and counts the rest exactly. */
class CappedBuffer {
  readonly #limit: number;
  readonly #keep: 'head' | 'tail';
  #chunks: Buffer[] = [];
  #kept = 0;
  dropped = 0;

  constructor(limit: number, keep: 'head' | 'tail' = 'head') {
    this.#limit = limit;
    this.#keep = keep;
  }

  push(chunk: Buffer): void {
    if (this.#keep === 'tail') {
      this.#chunks.push(chunk);
      this.#kept += chunk.length;
      if (this.#kept > this.#limit) {
        const all = Buffer.concat(this.#chunks);
        const over = all.length - this.#limit;
        this.#chunks = [all.subarray(over)];
        this.#kept = this.#limit;
        this.dropped += over;
      }
      return;
    }
    const room = Math.max(0, this.#limit - this.#kept);
    const take = Math.min(room, chunk.length);
    if (take > 0) {
      this.#chunks.push(take === chunk.length ? chunk : chunk.subarray(0, take));
      this.#kept += take;
    }
    this.dropped += chunk.length - take;
  }

  text(): string {
    return Buffer.concat(this.#chunks).toString('utf8');
  }
}

/**
 * The one way Patchbay runs a process on the host (the sandbox's bubblewrap and shell, host git):
 * spawned in its own process group, output collected up to a byte cap with the rest counted.
 * Timeout and abort kill the whole group with SIGKILL (git's ssh and remote helpers; for bwrap its
 * pid namespace too, via --die-with-parent), and by default so does the main process's exit
 * (background children would keep the pipes open); stragglers get CLOSE_GRACE_MS to close them. A non-zero exit is a result, not an error; only a failure
 * to start rejects ('sandbox_failed').
 */
export function runProcess(input: RunProcessInput): Promise<ExecResult> {
  const started = performance.now();
  const result = (partial: Partial<ExecResult>): ExecResult => ({
    exitCode: null,
    stdout: '',
    stderr: '',
    truncatedBytes: { stdout: 0, stderr: 0 },
    timedOut: false,
    aborted: false,
    durationMs: Math.round(performance.now() - started),
    ...partial,
  });
  if (input.signal?.aborted) return Promise.resolve(result({ aborted: true }));

  return new Promise((resolve, reject) => {
    const child = spawnInGroup(input);
    const stdout = new CappedBuffer(input.maxOutputBytes);
    const stderr = new CappedBuffer(input.maxOutputBytes, input.stderrKeeps);
    const killTree = (): void => killGroup(child);
    const limits = watchLimits(input, killTree);
    let exitCode: number | null = null;
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const cleanup = (): void => {
      settled = true;
      limits.stop();
      clearTimeout(graceTimer);
    };
    const finish = (): void => {
      if (settled) return;
      cleanup();
      resolve(
        result({
          exitCode,
          stdout: stdout.text(),
          stderr: stderr.text(),
          truncatedBytes: { stdout: stdout.dropped, stderr: stderr.dropped },
          timedOut: limits.timedOut,
          aborted: limits.aborted,
        }),
      );
    };

    feedInputs(child, input);
    if (child.pid !== undefined) input.onSpawn?.(child.pid, killTree);
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout.push(chunk);
      input.onStdout?.(chunk);
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', (error) => {
      if (settled) return;
      cleanup();
      killTree();
      reject(new PatchbayError('sandbox_failed', `could not start ${input.file}: ${error.message}`, { cause: error }));
    });
    child.on('exit', (code) => {
      exitCode = code;
      // Background children left in the group would keep the pipes open: end them too.
      if (input.killGroupOnExit ?? true) killTree();
      graceTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, CLOSE_GRACE_MS);
    });
    child.on('close', finish);
  });
}

/** Ends the child's whole process group; nothing when it is already gone. */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

/** Ends the run when its time limit passes or its signal aborts, noting which; `stop` stops watching. */
function watchLimits(input: RunProcessInput, kill: () => void): { timedOut: boolean; aborted: boolean; stop(): void } {
  const noted = { timedOut: false, aborted: false };
  const onAbort = (): void => {
    noted.aborted = true;
    kill();
  };
  const timer =
    input.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          noted.timedOut = true;
          kill();
        }, input.timeoutMs);
  input.signal?.addEventListener('abort', onAbort, { once: true });
  return Object.assign(noted, {
    stop(): void {
      clearTimeout(timer);
      input.signal?.removeEventListener('abort', onAbort);
    },
  });
}

/** The process, leader of a group of its own (so the whole tree can be killed), with a pipe per input. */
function spawnInGroup(input: RunProcessInput): ChildProcess {
  const extraFds = input.extraFds ?? [];
  return spawn(input.file, [...input.args], {
    cwd: input.cwd,
    env: input.env,
    detached: true,
    ...(input.argv0 !== undefined && { argv0: input.argv0 }),
    stdio: [input.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...extraFds.map(() => 'pipe' as const)],
  });
}

/** Writes the extra descriptors' contents and stdin, each closed after; a child that reads none of it is no error. */
function feedInputs(child: ChildProcess, input: RunProcessInput): void {
  (input.extraFds ?? []).forEach((content, index) => {
    const stream = child.stdio[3 + index] as NodeJS.WritableStream & {
      on(event: 'error', listener: () => void): void;
    };
    // A child that fails before reading is reported by its exit, not by a broken pipe.
    stream.on('error', () => {});
    stream.end(content);
  });
  if (child.stdin) {
    // The command may exit without reading its input; that is not our error.
    child.stdin.on('error', () => {});
    child.stdin.end(input.stdin);
  }
}
