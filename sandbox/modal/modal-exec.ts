import { randomBytes } from 'node:crypto';
import { PatchbayError } from '../../src/core/errors.ts';
import type { ExecResult } from '../sandbox.ts';
import { modalError } from './modal-errors.ts';

/** The part of the SDK's `Sandbox` this module uses (modal 0.11.1 typings). */
export type ModalProcess = {
  stdin: WritableStream<Uint8Array>;
  stdout: ReadableStream<Uint8Array>;
  stderr: ReadableStream<Uint8Array>;
  wait(): Promise<number>;
};
export type ModalExecTarget = {
  exec(
    command: string[],
    params: {
      mode: 'binary';
      stdout?: 'pipe' | 'ignore';
      stderr?: 'pipe' | 'ignore';
      workdir?: string;
      timeoutMs?: number;
      env?: Record<string, string>;
    },
  ): Promise<ModalProcess>;
};

export type ModalExecInput = {
  args: string[];
  workdir: string;
  env: Record<string, string>;
  timeoutMs: number;
  maxOutputBytes: number;
  signal?: AbortSignal;
  stdin?: Uint8Array;
  /** Resolves with a reason when the sandbox itself ended (the caller watches it). */
  sandboxEnded: Promise<string>;
  /** Each chunk of stdout as it arrives, beyond the cap too (an engine's event stream). Must not throw. */
  onStdout?: (chunk: Uint8Array) => void;
};

export type ModalExecOutput = {
  exitCode: number | null;
  stdout: Uint8Array;
  stderr: Uint8Array;
  truncatedBytes: { stdout: number; stderr: number };
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
  /** Set when the sandbox ended while the command ran. */
  sandboxEnded?: string;
};

/** Time the process gets to report its exit after it was killed, before the result is given up on. */
const KILL_GRACE_MS = 5_000;
/**
 * Bytes per stdin message: the SDK's own streaming size. Modal refuses a request message over gRPC's
 * 4 MiB, so one write of a whole bundle would be refused and the command left waiting for input.
 */
const STDIN_CHUNK_BYTES = 256 * 1024;
/**
 * A command's output keeps arriving after it exits (Modal streams far slower than a pipe): it is read
 * to the end of its stream, and only a stream that stays silent this long counts as broken.
 */
const OUTPUT_STALL_MS = 60_000;
/** Modal refuses a command over 64 KiB; anything near that goes into the sandbox as a script file. */
const MAX_INLINE_COMMAND_BYTES = 48 * 1024;

/**
 * Runs one command in a Modal sandbox. The command runs as the leader of its own session (setsid),
 * whose process group id it writes to a file first, so a timeout or an abort can end the whole
 * tree with a second exec (the SDK has no kill for an exec). Modal's own per-exec timeout is set a
 * little later as a backstop. Output is read as it streams and capped per stream.
 */
export async function runModalExec(sandbox: ModalExecTarget, input: ModalExecInput): Promise<ModalExecOutput> {
  const started = performance.now();
  const pidFile = `/tmp/.patchbay-exec-${randomBytes(6).toString('hex')}`;
  const args = commandBytes(input.args) > MAX_INLINE_COMMAND_BYTES ? await commandAsFile(sandbox, input) : input.args;
  const wrapper = ['setsid', '-w', 'sh', '-c', 'echo $$ > "$1"; shift; exec "$@"', 'sh', pidFile, ...args];
  const backstopMs = (Math.ceil(input.timeoutMs / 1000) + 30) * 1000;
  let proc: ModalProcess;
  try {
    proc = await sandbox.exec(wrapper, {
      mode: 'binary',
      stdout: 'pipe',
      stderr: 'pipe',
      workdir: input.workdir,
      env: input.env,
      timeoutMs: backstopMs,
    });
  } catch (error) {
    throw modalError(error, 'starting a command');
  }
  const stdout = capture(proc.stdout, input.maxOutputBytes, input.onStdout);
  const stderr = capture(proc.stderr, input.maxOutputBytes);
  const end = await firstEnd(proc, input, feedStdin(proc.stdin, input.stdin));

  const finish = (partial: Partial<ModalExecOutput>, read?: 'to-the-end' | 'with-grace') =>
    execOutput({ stdout, stderr }, started, partial, read);

  switch (end.kind) {
    case 'exit':
      // Exited: everything it wrote is still to come, however slowly.
      return finish({ exitCode: end.code }, 'to-the-end');
    case 'stdin': {
      // A command that exited without reading all of its input is not a failed delivery.
      const code = await Promise.race([
        proc.wait().catch(() => undefined),
        new Promise<undefined>((r) => setTimeout(r, 2_000, undefined)),
      ]);
      if (code !== undefined) return finish({ exitCode: code });
      await killGroup(sandbox, pidFile);
      throw new PatchbayError(
        'sandbox_failed',
        `sending input to a command in the Modal sandbox failed: ${modalError(end.error, 'writing its stdin').message}`,
        { cause: end.error },
      );
    }
    case 'ended':
      return finish({ sandboxEnded: end.reason });
    case 'error': {
      // The SDK gives up on a command whose sandbox went away; the caller's watch says why.
      const reason = await Promise.race([
        input.sandboxEnded,
        new Promise<undefined>((r) => setTimeout(r, 3_000, undefined)),
      ]);
      if (reason) return finish({ sandboxEnded: reason });
      throw modalError(end.error, 'waiting for a command');
    }
    case 'timeout':
    case 'abort': {
      await killGroup(sandbox, pidFile);
      await Promise.race([proc.wait().catch(() => undefined), new Promise((r) => setTimeout(r, KILL_GRACE_MS))]);
      return finish(end.kind === 'timeout' ? { timedOut: true } : { aborted: true });
    }
    default: {
      const _never: never = end;
      return _never;
    }
  }
}

/**
 * The command's result: its output read to the end (it exited: all it wrote is still to come) or
 * for KILL_GRACE_MS more (it was ended, or its sandbox was), and its time since `started`.
 */
async function execOutput(
  streams: { stdout: ReturnType<typeof capture>; stderr: ReturnType<typeof capture> },
  started: number,
  partial: Partial<ModalExecOutput>,
  read: 'to-the-end' | 'with-grace' = 'with-grace',
): Promise<ModalExecOutput> {
  const [out, err] =
    read === 'to-the-end'
      ? await wholeOutput(streams.stdout, streams.stderr)
      : await Promise.all([streams.stdout.done(KILL_GRACE_MS), streams.stderr.done(KILL_GRACE_MS)]);
  return {
    exitCode: null,
    timedOut: false,
    aborted: false,
    ...partial,
    stdout: out.bytes,
    stderr: err.bytes,
    truncatedBytes: { stdout: out.dropped, stderr: err.dropped },
    durationMs: Math.round(performance.now() - started),
  };
}

type End =
  | { kind: 'exit'; code: number }
  | { kind: 'error'; error: unknown }
  | { kind: 'stdin'; error: unknown }
  | { kind: 'timeout' }
  | { kind: 'abort' }
  | { kind: 'ended'; reason: string };

/** What happens first to a running command: it exits, fails, runs out of time, is aborted, loses its sandbox or its input. */
async function firstEnd(proc: ModalProcess, input: ModalExecInput, feeding: Promise<void>): Promise<End> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const ends: Promise<End>[] = [
    proc.wait().then(
      (code): End => ({ kind: 'exit', code }),
      (error: unknown): End => ({ kind: 'error', error }),
    ),
    new Promise<End>((resolve) => {
      timer = setTimeout(() => resolve({ kind: 'timeout' }), input.timeoutMs);
    }),
    input.sandboxEnded.then((reason): End => ({ kind: 'ended', reason })),
    // Input that cannot be delivered would leave the command waiting for it until its time limit.
    feeding.then(
      () => new Promise<End>(() => undefined),
      (error: unknown): End => ({ kind: 'stdin', error }),
    ),
  ];
  if (input.signal) {
    const signal = input.signal;
    ends.push(
      new Promise<End>((resolve) => {
        if (signal.aborted) return resolve({ kind: 'abort' });
        onAbort = () => resolve({ kind: 'abort' });
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    );
  }
  const end = await Promise.race(ends);
  clearTimeout(timer);
  if (onAbort) input.signal?.removeEventListener('abort', onAbort);
  return end;
}

/** Both streams read to their end; a stream that broke or went silent fails the command loudly. */
async function wholeOutput(stdout: ReturnType<typeof capture>, stderr: ReturnType<typeof capture>) {
  try {
    return await Promise.all([stdout.complete(OUTPUT_STALL_MS), stderr.complete(OUTPUT_STALL_MS)]);
  } catch (error) {
    throw new PatchbayError(
      'sandbox_failed',
      `the output of a command in the Modal sandbox did not arrive in full: ${modalError(error, 'reading its output').message}`,
      { cause: error },
    );
  }
}

/** Kills the process group the wrapper recorded; quiet when it is already gone. */
async function killGroup(sandbox: ModalExecTarget, pidFile: string): Promise<void> {
  try {
    const killer = await sandbox.exec(
      ['sh', '-c', 'pg=$(cat "$1" 2>/dev/null) && kill -KILL "-$pg" 2>/dev/null; rm -f "$1"; true', 'sh', pidFile],
      {
        mode: 'binary',
        stdout: 'ignore',
        stderr: 'ignore',
        timeoutMs: 30_000,
      },
    );
    await killer.stdin.close().catch(() => undefined);
    await Promise.race([killer.wait(), new Promise((r) => setTimeout(r, 10_000))]);
  } catch {
    // The sandbox may be gone; its commands went with it.
  }
}

/** Sends `data` as stdin in messages under Modal's size limit, then EOF; rejects when a write is refused. */
async function feedStdin(stdin: WritableStream<Uint8Array>, data: Uint8Array | undefined): Promise<void> {
  const writer = stdin.getWriter();
  try {
    for (let at = 0; data && at < data.length; at += STDIN_CHUNK_BYTES)
      await writer.write(data.subarray(at, at + STDIN_CHUNK_BYTES));
    await writer.close();
  } finally {
    writer.releaseLock();
  }
}

/** The size Modal counts for a command: its arguments' bytes, each with a separator. */
function commandBytes(args: readonly string[]): number {
  return args.reduce((sum, arg) => sum + Buffer.byteLength(arg, 'utf8') + 1, 0);
}

const shellQuote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/**
 * Puts a command too large for Modal into a script in the sandbox (through stdin, in chunks) and
 * returns the arguments that run it. `sh -c <text>` runs the text itself as the script (no single
 * argument of that size could be passed to exec), anything else is exec'd from it. The script
 * removes itself once the shell has it open.
 */
async function commandAsFile(sandbox: ModalExecTarget, input: ModalExecInput): Promise<string[]> {
  const path = `/tmp/.patchbay-cmd-${randomBytes(6).toString('hex')}`;
  const [first, flag, text, ...rest] = input.args;
  const script =
    first === 'sh' && flag === '-c' && text !== undefined && rest.length === 0
      ? text
      : `exec ${input.args.map(shellQuote).join(' ')}`;
  const upload = await runModalExec(sandbox, {
    args: ['sh', '-c', 'umask 077 && cat > "$1"', 'sh', path],
    workdir: '/',
    env: {},
    timeoutMs: 120_000,
    maxOutputBytes: 64 * 1024,
    sandboxEnded: input.sandboxEnded,
    stdin: Buffer.from(`rm -f -- "$0"\n${script}`, 'utf8'),
    ...(input.signal && { signal: input.signal }),
  });
  if (upload.exitCode !== 0) {
    throw new PatchbayError(
      'sandbox_failed',
      `putting a ${commandBytes(input.args)}-byte command into the Modal sandbox failed (exit ${upload.exitCode ?? 'none'}): ${Buffer.from(upload.stderr).toString('utf8').trim().slice(0, 500)}`,
    );
  }
  return ['sh', path];
}

/** Reads a stream as it arrives, keeping the first `limit` bytes and counting the rest. */
function capture(stream: ReadableStream<Uint8Array>, limit: number, onChunk?: (chunk: Uint8Array) => void) {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let dropped = 0;
  let progressAt = Date.now();
  let failure: { error: unknown } | undefined;
  const reader = stream.getReader();
  const reading = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      progressAt = Date.now();
      onChunk?.(value);
      const take = Math.min(Math.max(0, limit - kept), value.length);
      if (take > 0) chunks.push(value.subarray(0, take));
      kept += take;
      dropped += value.length - take;
    }
  })().catch((error: unknown) => {
    failure = { error };
  });
  return {
    /** What arrived, once the stream ended or `graceMs` passed (a command that was killed or lost). */
    async done(graceMs: number): Promise<{ bytes: Uint8Array; dropped: number }> {
      await Promise.race([reading, new Promise((r) => setTimeout(r, graceMs))]);
      reader.cancel().catch(() => undefined);
      return { bytes: Buffer.concat(chunks), dropped };
    },
    /** Everything, once the stream has ended; rejects when it broke or went silent for `stallMs`. */
    async complete(stallMs: number): Promise<{ bytes: Uint8Array; dropped: number }> {
      for (;;) {
        const left = stallMs - (Date.now() - progressAt);
        if (left <= 0) {
          reader.cancel().catch(() => undefined);
          throw new Error(`the stream stopped for ${Math.round(stallMs / 1000)} s after ${kept + dropped} bytes`);
        }
        let timer: NodeJS.Timeout | undefined;
        const ended = await Promise.race([
          reading.then(() => true),
          new Promise<boolean>((r) => (timer = setTimeout(r, left, false))),
        ]);
        clearTimeout(timer);
        if (ended) break;
      }
      if (failure) throw failure.error;
      return { bytes: Buffer.concat(chunks), dropped };
    },
  };
}

/** An ExecResult from the output, text decoded as UTF-8. */
export function toExecResult(output: ModalExecOutput): ExecResult {
  return {
    exitCode: output.exitCode,
    stdout: Buffer.from(output.stdout).toString('utf8'),
    stderr: Buffer.from(output.stderr).toString('utf8'),
    truncatedBytes: output.truncatedBytes,
    timedOut: output.timedOut,
    aborted: output.aborted,
    durationMs: output.durationMs,
  };
}
