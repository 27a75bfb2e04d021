import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { PatchbayError } from '../src/core/errors.ts';

// The PostgreSQL an earlier process left running in a data directory: found, taken over or stopped.

/**
 * A process killed with SIGKILL leaves its PostgreSQL running, holding the data directory: that
 * server, with the port it listens on and whether it said it is ready (from postmaster.pid). A
 * server whose parent is still alive belongs to another running Patchbay: refuse rather than take
 * it from under it.
 */
export async function findStalePostmaster(
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
  const holder =
    parent !== undefined && parent > 1 && alive(parent) && ownedByParent ? parent : await liveAdopter(owner, parent);
  if (holder !== undefined) {
    throw new PatchbayError(
      'conflict',
      `another Patchbay (pid ${holder}, such as a running npm start) holds the embedded PostgreSQL in ${databaseDir}, which one process at a time can use: stop it, give this command its own DATA_DIR, or run both on one PostgreSQL server with DATABASE_URL`,
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
export async function stopPostmaster(pid: number): Promise<void> {
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 15_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

/** Whether something accepts TCP connections on the loopback port. */
export function accepts(port: number): Promise<boolean> {
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

/**
 * The process that took over an orphaned server and still uses it: the owner file names the last
 * process that started or adopted it (embedded-postgres.ts writes it either way), which is not the
 * server's parent once it was adopted. Undefined when that process is gone (or is not Node: the
 * pid was reused), so a server left behind twice is still taken over.
 */
async function liveAdopter(owner: number | undefined, parent: number | undefined): Promise<number | undefined> {
  if (owner === undefined || owner === parent || owner === process.pid || !alive(owner)) return undefined;
  return /(^|\/)node\b/.test(await commandLine(owner)) ? owner : undefined;
}

/** Where the pid of the process that started (or took over) a database is kept, beside its directory. */
export function ownerFile(databaseDir: string): string {
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

/** Whether a process with this pid exists (signal 0 reaches it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
