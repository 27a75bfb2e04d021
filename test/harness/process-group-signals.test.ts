import { access, chmod, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORPHAN_GRACE_SECONDS } from '../../db/embedded-postmaster.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  linesAboveInfo,
  serverApi,
  spawnPatchbay,
  startPatchbayProcess,
  type ServerProcess,
} from '../helpers/server-process.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';

/**
 * Signals as production sends them. A terminal's Ctrl-C goes to every process of the foreground
 * job (the whole process group), a second Ctrl-C means "now", and supervisors (systemd's
 * control-group kill, `kill -- -pgid`) send SIGTERM to the group. Each process here is spawned
 * detached, so it leads its own group as a shell's job does, and the signal goes to `-pid`.
 * Whatever the case: exit code 0, nothing above info (one line for the forced exit), and no
 * embedded PostgreSQL left behind.
 */
describe('signals to the whole process group', () => {
  let remote: RemoteFixture;
  let dir: string;
  let scenario: string;
  const procs: Omit<ServerProcess, 'url'>[] = [];

  beforeAll(async () => {
    remote = await createRemote();
    dir = await mkdtemp(join(tmpdir(), 'patchbay-signals-'));
    await chmod(dir, 0o755);
    scenario = join(dir, 'scenario.json');
    // The first command marks that it runs, then takes a minute: long enough to be signalled mid-run.
    await writeFile(
      scenario,
      JSON.stringify({
        turns: [
          {
            toolCalls: [
              {
                id: 'call_slow',
                name: 'run_shell',
                input: { command: 'touch .git/started; sleep 60; echo one > one.txt', timeout_seconds: 120 },
              },
            ],
          },
          { text: 'Done.' },
        ],
      }),
    );
  });
  afterAll(async () => {
    for (const proc of procs)
      if (proc.child.exitCode === null && proc.child.signalCode === null) process.kill(-proc.pid, 'SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    await remote.cleanup();
    await removeDataDir(dir);
  });

  const baseEnv = (name: string) => ({
    DATA_DIR: join(dir, name),
    MODEL_PROVIDER: 'scripted',
    SCRIPTED_SCENARIO: scenario,
    LOG_LEVEL: 'info',
    SHUTDOWN_GRACE_SECONDS: '1',
    PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
  });
  const start = async (command: 'serve' | 'api' | 'worker', env: Record<string, string>) => {
    const proc = await startPatchbayProcess(command, env, { detached: true });
    procs.push(proc);
    return proc;
  };
  const startSession = async (api: { url?: string }, dataDir: string) => {
    const { id } = await serverApi<{ id: string }>({ url: api.url! }, '/api/sessions', {
      method: 'POST',
      body: JSON.stringify({
        repo: remote.remote,
        prompt: 'Take a minute',
        author: { name: 'Alice', email: 'alice@example.com' },
      }),
    });
    await commandRunning(dataDir);
    return id;
  };
  /** The slow command runs (its marker is in a workspace), not just asked for. */
  const commandRunning = (dataDir: string) =>
    waitFor(
      async () => {
        const workspaces = await readdir(join(dataDir, 'workspaces')).catch(() => []);
        for (const name of workspaces)
          if (await exists(join(dataDir, 'workspaces', name, '.git', 'started'))) return true;
        return false;
      },
      'the slow command to start',
      120_000,
    );
  const postmasterOf = async (dataDir: string) =>
    Number((await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const signalGroup = (proc: { pid: number }, signal: NodeJS.Signals) => process.kill(-proc.pid, signal);
  const fromShutdown = (proc: Omit<ServerProcess, 'url'>) =>
    proc.lines().slice(proc.lines().findIndex((l) => l.msg?.startsWith('shutting down')));

  for (const [signal, busy] of [
    ['SIGINT', false],
    ['SIGINT', true],
    ['SIGTERM', false],
    ['SIGTERM', true],
  ] as const) {
    it(`patchbay serve, ${busy ? 'with a run going' : 'idle'}: ${signal} to the group exits 0, quietly, and stops its database`, {
      timeout: 300_000,
    }, async () => {
      const env = { ...baseEnv(`serve-${signal}-${busy}`), PORT: '0' };
      const server = await start('serve', env);
      const postmaster = await postmasterOf(env.DATA_DIR);
      if (busy) await startSession(server, env.DATA_DIR);
      signalGroup(server, signal);
      expect(await server.exited).toEqual({ code: 0, signal: null });
      expect(linesAboveInfo(server.lines())).toEqual([]);
      expect(server.lines().some((l) => l.msg === 'Patchbay stopped')).toBe(true);
      // Stopped by Patchbay before it exited, not left to die or linger.
      expect(alive(postmaster)).toBe(false);
      expect(await exists(join(env.DATA_DIR, 'postgres', 'postmaster.pid'))).toBe(false);
    });
  }

  it('npm start with a run going: Ctrl-C to the group (npm forwards it to the server, which the terminal signalled too) exits 0, quietly', {
    timeout: 300_000,
  }, async () => {
    const env = {
      ...baseEnv('npm-start'),
      PORT: '0',
      HOME: dir,
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
    };
    const npm = await startPatchbayProcess('start', env, { detached: true, command: ['npm', 'start'] });
    procs.push(npm);
    const postmaster = await postmasterOf(env.DATA_DIR);
    await startSession({ url: npm.url! }, env.DATA_DIR);
    signalGroup(npm, 'SIGINT');
    expect(await npm.exited).toEqual({ code: 0, signal: null });
    // npm's own banner (the script it runs) is not the server's output.
    const banner = (l: { raw?: string }) =>
      l.raw !== undefined && /^> (patchbay@|(exec )?node src\/cli\.ts serve)/.test(l.raw);
    expect(linesAboveInfo(npm.lines().filter((l) => !banner(l)))).toEqual([]);
    expect(npm.lines().some((l) => l.msg === 'Patchbay stopped')).toBe(true);
    expect(alive(postmaster)).toBe(false);
  });

  it('patchbay serve with a run going: a second Ctrl-C exits 0 at once with one line, and the database goes too', {
    timeout: 300_000,
  }, async () => {
    const env = { ...baseEnv('serve-force'), PORT: '0', SHUTDOWN_GRACE_SECONDS: '60' };
    const server = await start('serve', env);
    const postmaster = await postmasterOf(env.DATA_DIR);
    await startSession(server, env.DATA_DIR);
    signalGroup(server, 'SIGINT');
    await server.waitForLine((l) => l.msg?.startsWith('shutting down') === true);
    // A person pressing Ctrl-C again, not the same press heard twice (see repeated-signals.ts).
    await new Promise((r) => setTimeout(r, 800));
    signalGroup(server, 'SIGINT');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(linesAboveInfo(fromShutdown(server)).map((l) => l.raw ?? l.msg)).toEqual([
      'patchbay: SIGINT again; exiting without finishing the shutdown',
    ]);
    await waitFor(async () => !alive(postmaster), 'the embedded PostgreSQL to stop', 30_000);
    expect(await exists(join(env.DATA_DIR, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('patchbay serve killed outright (SIGKILL to its process alone, as the OOM killer does): a restart takes its database over, else it stops on its own', {
    timeout: 300_000,
  }, async () => {
    const env = { ...baseEnv('serve-killed'), PORT: '0' };
    const first = await start('serve', env);
    const postmaster = await postmasterOf(env.DATA_DIR);
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    // A supervisor restarts it at once: the new server takes the running database over...
    const second = await start('serve', env);
    expect(linesAboveInfo(second.lines()).map((l) => l.msg)).toEqual([
      'taking over the PostgreSQL an earlier process left running',
    ]);
    expect(await postmasterOf(env.DATA_DIR)).toBe(postmaster);
    // ...and keeps it past the grace the dead server's lifeline would have given it.
    await new Promise((r) => setTimeout(r, (ORPHAN_GRACE_SECONDS + 3) * 1000));
    expect(alive(postmaster)).toBe(true);
    expect((await fetch(`${second.url}/healthz`)).status).toBe(200);
    expect(linesAboveInfo(second.lines()).map((l) => l.msg)).toEqual([
      'taking over the PostgreSQL an earlier process left running',
    ]);
    // Killed as well, with nobody to take over: an orphan would hold the data directory and its
    // port until someone noticed; this one stops once its grace is over.
    process.kill(second.pid, 'SIGKILL');
    await second.exited;
    await waitFor(
      async () => !alive(postmaster),
      'the orphaned PostgreSQL to stop',
      (ORPHAN_GRACE_SECONDS + 30) * 1000,
    );
    expect(await exists(join(env.DATA_DIR, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('patchbay api and patchbay worker on DATABASE_URL: Ctrl-C to each group, the worker mid-run, exits 0 quietly', {
    timeout: 300_000,
  }, async () => {
    const database = await createTestDatabase();
    try {
      const shared = {
        ...baseEnv('split'),
        DATABASE_URL: database.url,
        QUEUE_HEARTBEAT_SECONDS: '600',
        QUEUE_MONITOR_SECONDS: '600',
      };
      const workerEnv = { ...shared, DATA_DIR: join(dir, 'split-worker') };
      const [api, worker] = await Promise.all([
        start('api', { ...shared, DATA_DIR: join(dir, 'split-api'), PORT: '0' }),
        start('worker', workerEnv),
      ]);
      await startSession(api, workerEnv.DATA_DIR);
      signalGroup(worker, 'SIGINT');
      expect(await worker.exited).toEqual({ code: 0, signal: null });
      expect(linesAboveInfo(worker.lines())).toEqual([]);
      signalGroup(api, 'SIGINT');
      expect(await api.exited).toEqual({ code: 0, signal: null });
      expect(linesAboveInfo(api.lines())).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('patchbay run: Ctrl-C to the group mid-run stops the session, exits 0 and stops its database', {
    timeout: 300_000,
  }, async () => {
    const env = { ...baseEnv('cli'), HOME: dir };
    const cli = spawnPatchbay(['run', '--repo', remote.remote, 'Take a minute'], env, { detached: true });
    procs.push(cli);
    await commandRunning(env.DATA_DIR);
    const postmaster = await postmasterOf(env.DATA_DIR);
    signalGroup(cli, 'SIGINT');
    expect(await cli.exited).toEqual({ code: 0, signal: null });
    // The CLI logs to stderr (at warn unless LOG_LEVEL says otherwise): nothing above info there.
    expect(linesAboveInfo(cli.stderr().split('\n').filter(Boolean).map(parseLine))).toEqual([]);
    expect(cli.lines().some((l) => l.raw?.includes('Stopped.'))).toBe(true);
    expect(alive(postmaster)).toBe(false);
    expect(await exists(join(env.DATA_DIR, 'postgres', 'postmaster.pid'))).toBe(false);
  });
});

function parseLine(line: string): { level?: number; msg?: string; raw?: string } {
  try {
    return JSON.parse(line) as { level?: number; msg?: string };
  } catch {
    return { raw: line };
  }
}

function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** Whether the process runs (a zombie waiting for its reaper has stopped). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
