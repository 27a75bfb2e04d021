import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SessionRecord } from '../../src/core/session-record.ts';
import { waitFor } from './wait-for.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** One pino line of the server's output (or `{ raw }` for a line that is not JSON). */
export type LogLine = { level?: number; msg?: string; raw?: string; [key: string]: unknown };

export type ServerProcess = {
  child: ChildProcess;
  url: string;
  pid: number;
  /** Every line the server wrote so far, stdout and stderr. */
  lines(): LogLine[];
  /** What it wrote to stderr alone (the CLI's log goes there; its stdout is the session's progress). */
  stderr(): string;
  /** Resolves with how the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first line that matches, as soon as the server writes it. */
  waitForLine(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
};

/** Starts `patchbay serve` as its own process with only `env`, as a user would, and waits until it listens. */
export async function startServer(env: Record<string, string>, options: SpawnOptions = {}): Promise<ServerProcess> {
  const started = await startPatchbayProcess('serve', env, options);
  return { ...started, url: started.url! };
}

/**
 * Starts `patchbay <command>` as its own process with only `env` and waits for its "Patchbay is up"
 * line; `url` is where it listens (a worker has none), `health` its health check (WORKER_HEALTH_PORT).
 */
export function startPatchbayProcess(
  command: 'serve' | 'api' | 'worker' | 'start',
  env: Record<string, string>,
  options: SpawnOptions = {},
): Promise<Omit<ServerProcess, 'url'> & { url?: string; health?: string }> {
  const started = spawnPatchbay(command === 'start' ? [] : [command], env, options);
  return started
    .waitForLine((line) => line.msg === 'Patchbay is up')
    .then((up) => ({
      ...started,
      ...(typeof up.url === 'string' && { url: up.url }),
      ...(typeof up.health === 'string' && { health: up.health }),
    }));
}

export type SpawnOptions = {
  /**
   * Lead a process group of its own, as a shell's foreground job does: `process.kill(-pid, signal)`
   * then reaches the whole group, the way a terminal's Ctrl-C or a supervisor's group kill does.
   */
  detached?: boolean;
  /** Run this instead of `node src/cli.ts` (say `npm start`, as a user types it); the args are appended. */
  command?: [string, ...string[]];
};

/** Starts `patchbay <args>` as its own process with only `env`, collecting its output lines. */
export function spawnPatchbay(
  args: string[],
  env: Record<string, string>,
  options: SpawnOptions = {},
): Omit<ServerProcess, 'url'> {
  const [file, ...before] = options.command ?? [process.execPath, 'src/cli.ts'];
  const child = spawn(file, [...before, ...args], {
    cwd: root,
    // A developer's .env in the checkout (read by every command) stays out of the test's settings.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PATCHBAY_ENV_FILE: '/dev/null', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  const take = (stream: NodeJS.ReadableStream) => {
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      rest += chunk.toString();
      const parts = rest.split('\n');
      rest = parts.pop()!;
      for (const part of parts) {
        if (!part.trim()) continue;
        try {
          lines.push(JSON.parse(part) as LogLine);
        } catch {
          lines.push({ raw: part });
        }
      }
      for (const wake of waiters) wake();
    });
  };
  take(child.stdout!);
  take(child.stderr!);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  let ended = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      // Set before waking the waiters, so one waiting for a line that never came fails now, not at its timeout.
      ended = true;
      resolve({ code, signal });
      for (const wake of waiters) wake();
    }),
  );
  const waitForLine = (match: (line: LogLine) => boolean, timeoutMs = 180_000) =>
    new Promise<LogLine>((resolve, reject) => {
      const timer = setTimeout(
        () => finish(new Error(`timed out waiting for a server log line:\n${dump()}`)),
        timeoutMs,
      );
      const check = () => {
        const found = lines.find(match);
        if (found) finish(undefined, found);
        else if (ended) finish(new Error(`the server exited before writing the line:\n${dump()}`));
      };
      const finish = (error?: Error, line?: LogLine) => {
        clearTimeout(timer);
        waiters.delete(check);
        if (error) reject(error);
        else resolve(line!);
      };
      waiters.add(check);
      check();
    });
  const dump = () => lines.map((l) => l.raw ?? JSON.stringify(l)).join('\n');
  return { child, pid: child.pid!, lines: () => [...lines], stderr: () => stderr, exited, waitForLine };
}

/** Lines above pino's info level (warn, error, fatal) and anything that is not a log line. */
export function linesAboveInfo(lines: LogLine[]): LogLine[] {
  return lines.filter((l) => l.raw !== undefined || (l.level ?? 0) > 30);
}

/** A JSON call to a server process's API; throws with the status and body when it is not a success. */
export async function serverApi<T>(server: { url: string }, path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(`${server.url}${path}`, { ...init, headers: { 'content-type': 'application/json' } });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** Asks the server for the session until it has ended (completed, failed or cancelled). */
export function sessionEnded(server: { url: string }, id: string, timeoutMs = 120_000): Promise<SessionRecord> {
  return waitFor(
    async () => {
      const session = await serverApi<SessionRecord>(server, `/api/sessions/${id}`);
      return ['completed', 'failed', 'cancelled'].includes(session.status) && session;
    },
    'the session to end',
    timeoutMs,
  );
}

/**
 * Starts a session over the API, as the page and the CLI do (`POST /api/sessions`), and returns its
 * id; throws unless the server answers 201. The author is Ada unless given.
 */
export async function createSessionOverApi(
  server: { url?: string | undefined },
  input: { repo: string; prompt: string; author?: { name: string; email?: string } },
): Promise<string> {
  if (!server.url) throw new Error('the server does not listen: start it with serve');
  const response = await fetch(`${server.url}/api/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ author: { name: 'Ada' }, ...input }),
  });
  if (response.status !== 201) throw new Error(`POST /api/sessions: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}
