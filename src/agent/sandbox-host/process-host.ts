import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ExecResult, Sandbox } from '../../../sandbox/sandbox.ts';
import { PAGE_SCRIPT } from './page-script.ts';

/**
 * The session's process host: one long-lived command in the sandbox (host-daemon.py) that holds
 * what must outlive a single command there, the agent's background processes and its browser, in
 * one network namespace. Tools reach it with short commands over a unix socket in the workspace's
 * .git (never part of a change). It starts on first use and is stopped when the run ends
 * (stopProcessHost), which ends everything it started; a later run starts a fresh one.
 */
const SOCKET_DIR = '.git/patchbay-host';
const SOCKET_NAME = 'host.sock';
/** How long the host command may live: the run's own limits end it long before. */
const HOST_LIFETIME_MS = 24 * 60 * 60_000;
/** The most background processes running at once in one sandbox. */
export const MAX_BACKGROUND_PROCESSES = 4;

const DAEMON_SOURCE = readFileSync(new URL('./host-daemon.py', import.meta.url), 'utf8').replace(
  /^PAGE_JS = None.*$/m,
  () => `PAGE_JS = ${JSON.stringify(PAGE_SCRIPT)}`,
);

/** Connects, sends one request line, prints the answer. The socket path and wait come as arguments. */
const CLIENT = String.raw`python3 -c '
import socket, sys, time
deadline = time.time() + float(sys.argv[2])
while True:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        break
    except OSError:
        if time.time() > deadline:
            sys.stderr.write("the process host does not answer\n")
            sys.exit(3)
        time.sleep(0.1)
s.sendall(sys.stdin.buffer.read() + b"\n")
while True:
    data = s.recv(65536)
    if not data:
        break
    sys.stdout.buffer.write(data)
' "$PB_SOCKET" "$PB_CONNECT_SECONDS"`;

type Running = { controller: AbortController; done: Promise<ExecResult>; ended?: ExecResult | undefined };

/** The hosts this process started, by the sandbox handle they run in. */
const hosts = new WeakMap<Sandbox, Running>();

const Answer = z.union([
  z.object({ ok: z.literal(true), result: z.record(z.string(), z.unknown()) }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);

/** What the host answered: its result, or why not as a sentence for the model. */
export type HostAnswer = { kind: 'done'; result: Record<string, unknown> } | { kind: 'refused'; message: string };

function socketPath(sandbox: Sandbox): string {
  return `${sandbox.workdir}/${SOCKET_DIR}/${SOCKET_NAME}`;
}

/** The running host of this sandbox handle, started when there is none (or the last one ended). */
function ensureHost(sandbox: Sandbox): { running: Running; fresh: boolean } {
  const known = hosts.get(sandbox);
  if (known && !known.ended) return { running: known, fresh: false };
  const controller = new AbortController();
  const done = sandbox.exec(`mkdir -p ${SOCKET_DIR} && python3 - "$PB_SOCKET"`, {
    stdin: DAEMON_SOURCE,
    env: {
      PB_SOCKET: socketPath(sandbox),
      PB_SESSION_TAG: sandbox.sessionId.replace(/[^A-Za-z0-9-]/g, ''),
      PB_MAX_PROCESSES: String(MAX_BACKGROUND_PROCESSES),
    },
    timeoutMs: HOST_LIFETIME_MS,
    maxOutputBytes: 64 * 1024,
    signal: controller.signal,
  });
  const running: Running = { controller, done };
  void done.then(
    (result) => {
      running.ended = result;
    },
    (error: unknown) => {
      running.ended = hostFailure(error);
    },
  );
  hosts.set(sandbox, running);
  return { running, fresh: true };
}

function hostFailure(error: unknown): ExecResult {
  const message = error instanceof Error ? error.message : String(error);
  return {
    exitCode: null,
    stdout: '',
    stderr: message,
    truncatedBytes: { stdout: 0, stderr: 0 },
    timedOut: false,
    aborted: false,
    durationMs: 0,
  };
}

/**
 * Sends one request to the sandbox's process host (starting it when needed) and reads its answer.
 * `timeoutMs` bounds the whole call; aborting `signal` ends the call (the host keeps running).
 */
export async function callHost(
  sandbox: Sandbox,
  request: Record<string, unknown>,
  options: { signal: AbortSignal; timeoutMs: number; maxOutputBytes?: number },
): Promise<HostAnswer> {
  const { running, fresh } = ensureHost(sandbox);
  const result = await sandbox.exec(CLIENT, {
    stdin: JSON.stringify(request),
    env: { PB_SOCKET: socketPath(sandbox), PB_CONNECT_SECONDS: fresh ? '20' : '5' },
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes ?? 1024 * 1024,
    signal: options.signal,
  });
  if (result.aborted) return { kind: 'refused', message: 'Stopped: the run was stopped.' };
  if (result.timedOut) return { kind: 'refused', message: `No answer in ${Math.round(options.timeoutMs / 1000)}s.` };
  if (result.exitCode !== 0) {
    const ended = running.ended;
    const why = ended ? ` It ended: ${ended.stderr.trim().slice(-1500) || `exit ${ended.exitCode}`}` : '';
    return { kind: 'refused', message: `The sandbox's process host did not answer.${why}` };
  }
  const parsed = Answer.safeParse(safeJson(result.stdout));
  if (!parsed.success) return { kind: 'refused', message: 'The process host gave an answer that is not one.' };
  return parsed.data.ok
    ? { kind: 'done', result: parsed.data.result }
    : { kind: 'refused', message: parsed.data.error };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Ends the sandbox handle's process host, if it started one: it stops every background process and
 * the browser, then the host command itself is killed. Must not throw; waits at most a few seconds.
 */
export async function stopProcessHost(sandbox: Sandbox): Promise<void> {
  const running = hosts.get(sandbox);
  if (!running) return;
  if (!running.ended)
    await callHost(sandbox, { op: 'shutdown' }, { signal: AbortSignal.timeout(5_000), timeoutMs: 5_000 }).catch(
      () => undefined,
    );
  hosts.delete(sandbox);
  running.controller.abort();
  await Promise.race([running.done.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 5_000))]);
}
