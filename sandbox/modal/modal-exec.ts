import { randomBytes } from 'node:crypto';
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
  exec(command: string[], params: { mode: 'binary'; stdout?: 'pipe' | 'ignore'; stderr?: 'pipe' | 'ignore'; workdir?: string; timeoutMs?: number; env?: Record<string, string> }): Promise<ModalProcess>;
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
 * Runs one command in a Modal sandbox. The command runs as the leader of its own session (setsid),
 * whose process group id it writes to a file first, so a timeout or an abort can end the whole
 * tree with a second exec (the SDK has no kill for an exec). Modal's own per-exec timeout is set a
 * little later as a backstop. Output is read as it streams and capped per stream.
 */
export async function runModalExec(sandbox: ModalExecTarget, input: ModalExecInput): Promise<ModalExecOutput> {
  const started = performance.now();
  const pidFile = `/tmp/.patchbay-exec-${randomBytes(6).toString('hex')}`;
  const wrapper = ['setsid', '-w', 'sh', '-c', 'echo $$ > "$1"; shift; exec "$@"', 'sh', pidFile, ...input.args];
  const backstopMs = (Math.ceil(input.timeoutMs / 1000) + 30) * 1000;
  let proc: ModalProcess;
  try {
    proc = await sandbox.exec(wrapper, { mode: 'binary', stdout: 'pipe', stderr: 'pipe', workdir: input.workdir, env: input.env, timeoutMs: backstopMs });
  } catch (error) {
    throw modalError(error, 'starting a command');
  }
  const stdout = capture(proc.stdout, input.maxOutputBytes);
  const stderr = capture(proc.stderr, input.maxOutputBytes);
  void feedStdin(proc.stdin, input.stdin).catch(() => undefined);

  type End = { kind: 'exit'; code: number } | { kind: 'error'; error: unknown } | { kind: 'timeout' } | { kind: 'abort' } | { kind: 'ended'; reason: string };
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

  const finish = async (partial: Partial<ModalExecOutput>): Promise<ModalExecOutput> => {
    const [out, err] = await Promise.all([stdout.done(KILL_GRACE_MS), stderr.done(KILL_GRACE_MS)]);
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
  };

  switch (end.kind) {
    case 'exit':
      return finish({ exitCode: end.code });
    case 'ended':
      return finish({ sandboxEnded: end.reason });
    case 'error': {
      // The SDK gives up on a command whose sandbox went away; the caller's watch says why.
      const reason = await Promise.race([input.sandboxEnded, new Promise<undefined>((r) => setTimeout(r, 3_000, undefined))]);
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

/** Kills the process group the wrapper recorded; quiet when it is already gone. */
async function killGroup(sandbox: ModalExecTarget, pidFile: string): Promise<void> {
  try {
    const killer = await sandbox.exec(['sh', '-c', 'pg=$(cat "$1" 2>/dev/null) && kill -KILL "-$pg" 2>/dev/null; rm -f "$1"; true', 'sh', pidFile], {
      mode: 'binary',
      stdout: 'ignore',
      stderr: 'ignore',
      timeoutMs: 30_000,
    });
    await killer.stdin.close().catch(() => undefined);
    await Promise.race([killer.wait(), new Promise((r) => setTimeout(r, 10_000))]);
  } catch {
    // The sandbox may be gone; its commands went with it.
  }
}

async function feedStdin(stdin: WritableStream<Uint8Array>, data: Uint8Array | undefined): Promise<void> {
  const writer = stdin.getWriter();
  try {
    if (data && data.length > 0) await writer.write(data);
    await writer.close();
  } finally {
    writer.releaseLock();
  }
}

/** Reads a stream as it arrives, keeping the first `limit` bytes and counting the rest. */
function capture(stream: ReadableStream<Uint8Array>, limit: number) {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let dropped = 0;
  const reader = stream.getReader();
  const reading = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      const take = Math.min(Math.max(0, limit - kept), value.length);
      if (take > 0) chunks.push(value.subarray(0, take));
      kept += take;
      dropped += value.length - take;
    }
  })().catch(() => undefined);
  return {
    /** What arrived, once the stream ended or `graceMs` passed. */
    async done(graceMs: number): Promise<{ bytes: Uint8Array; dropped: number }> {
      await Promise.race([reading, new Promise((r) => setTimeout(r, graceMs))]);
      reader.cancel().catch(() => undefined);
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
