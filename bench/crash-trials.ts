/**
 * Crash trials: the real `patchbay serve` process, on its embedded PostgreSQL under one DATA_DIR,
 * with a scripted model whose run writes, sleeps and writes again. Each trial starts a session,
 * breaks something mid-run (SIGKILL of the server at a random moment or right after a short step,
 * SIGKILL of the embedded PostgreSQL, SIGTERM of the server, Ctrl-C to the server's whole process
 * group as a terminal sends it, idle or mid-run), restarts the server when it is gone,
 * and records: completed / failed / stuck, duplicated events (per type and call id), gaps in `seq`,
 * whether the pushed branch holds all the work, recovery time (new process spawned → run taken up
 * again), exit codes and lines above info of SIGTERM and Ctrl-C, whether the embedded database
 * outlived a stopped server, and orphaned processes after the final shutdown. Servers are spawned
 * leading their own process group, as a shell's job does.
 *
 *   node bench/crash-trials.ts [--trials 30] [--seed 1]
 *
 * Trials are spread over the kinds: a third random kills, the rest split between targeted kills,
 * database kills and SIGTERMs, a kill between a tool call's checkpoint and its recorded result, and
 * two kinds on a fleet (one API, two workers, one external PostgreSQL; see crash-trials-fleet.ts): a
 * worker paused past its lease while the other takes over, then resumed, and a database outage
 * longer than the heartbeat. The command of the scenario appends to its files, so a call applied
 * twice shows as a doubled line ("effects twice"). Loopback only; the script stops by itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { StoredEvent } from '../src/core/events.ts';
import type { SessionRecord } from '../src/core/session-record.ts';
import { releaseExitHooks } from '../db/embedded-postgres.ts';
import { startFanOut } from './crash-trials-fan-out.ts';
import { sleep, startFleet, terminal, until, type FleetKind } from './crash-trials-fleet.ts';
import { duplicatesIn, seqGaps } from './crash-trials-log.ts';
import { startFakeGitHub } from '../test/fakes/fake-github.ts';
import { removeDataDir } from '../test/sandbox/sandbox-test-helpers.ts';
import { createRemote, git } from '../test/git/git-fixture.ts';
import {
  linesAboveInfo,
  startServer as startServerProcess,
  type LogLine,
  type ServerProcess,
} from '../test/helpers/server-process.ts';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '30' },
    seed: { type: 'string', default: '1' },
    kinds: { type: 'string' },
    grace: { type: 'string', default: '3' },
    verbose: { type: 'boolean', default: false },
  },
});
// The fleet's database imports embedded-postgres, whose exit hooks call process.exit(0) at
// `beforeExit`: they would erase the exit code this script sets when a trial went wrong.
releaseExitHooks(['beforeExit', 'exit']);
const trialCount = Number(values.trials);
let seed = Number(values.seed);
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};

type Kind =
  | 'random-kill'
  | 'kill-tool-running'
  | 'kill-after-commit'
  | 'kill-after-push'
  | 'kill-after-diff-updated'
  | 'kill-in-pr-create'
  | 'kill-database'
  | 'sigterm'
  | 'sigterm-random'
  | 'sigterm-after-commit'
  | 'kill-mid-git'
  | 'ctrl-c-idle'
  | 'ctrl-c-busy'
  | 'kill-after-checkpoint'
  | 'fan-out'
  | FleetKind;
const targeted: Kind[] = [
  'kill-tool-running',
  'kill-after-commit',
  'kill-after-push',
  'kill-after-diff-updated',
  'kill-in-pr-create',
  'kill-database',
  'sigterm',
  'sigterm-random',
  'sigterm-after-commit',
  'kill-mid-git',
  'ctrl-c-idle',
  'ctrl-c-busy',
  'kill-after-checkpoint',
  'pause-past-lease',
  'database-outage',
  'fan-out',
];
const fleetKinds: readonly Kind[] = ['pause-past-lease', 'database-outage'];
// `--kinds sigterm,kill-database` runs only those kinds, in turn (to reproduce one kind of failure).
const only = values.kinds?.split(',').map((k) => k.trim()) as Kind[] | undefined;
let next = 0;
const kinds: Kind[] = Array.from({ length: trialCount }, (_, i) =>
  only ? only[i % only.length]! : i % 3 === 0 ? 'random-kill' : targeted[next++ % targeted.length]!,
);

type Trial = {
  kind: Kind;
  /** The server exited on its own during the trial (a crash), with its last lines above info. */
  crashed?: string[];
  outcome: 'completed' | 'failed' | 'stuck' | 'cancelled' | 'queued' | 'running' | 'waiting';
  duplicates: string[];
  gaps: number;
  workComplete: boolean;
  /** Files of the pushed branch whose line was written more than once: a call applied twice. */
  effectsTwice: number;
  /** Pause trials: events that landed after the paused worker was resumed (0 is right). */
  landedAfterResume?: number;
  /** Pull requests GitHub holds for the session's branch (one is right). */
  prs: number;
  /** The log records the PR (pr-opened). */
  prRecorded: boolean;
  /** Fan-out trials: tasks asked for, child rows, children completed, spawn and end events on the parent's log. */
  children?: { expected: number; rows: number; completed: number; spawnedEvents: number; endedEvents: number };
  /** The session's error, when it did not complete. */
  error?: string;
  /** Kill landed before the run ended: the run had to be taken up again. */
  interrupted: boolean;
  recoveryMs?: number;
  /** Of the recovery: new process spawned → it serves (database up, migrations, queue). */
  bootMs?: number;
  /** Of the boot: spawned → first log line (Node start, module loading), → database up, → listening. */
  phases?: { loaded: number; database: number; listening: number };
  exitCode?: number | null;
  shutdownMs?: number;
  aboveInfo?: number;
  /** The embedded PostgreSQL still ran after the signalled server exited. */
  databaseLeft?: boolean;
};

const token = `crashtrial${process.pid}`;
const root = await mkdtemp(join(tmpdir(), 'patchbay-crash-trials-'));
await chmod(root, 0o755);
const remote = await createRemote();
// The repository lives on a loopback GitHub (REST, App auth, git over HTTP), so every run ends by
// opening a pull request, and a kill between the push and the PR can show a missing or second PR.
const github = await startFakeGitHub();
const owner = 'trial-org';
await github.addRepo(owner, 'work', remote.remote, 77);
const bare = github.repo(owner, 'work').gitDir;
const repoUrl = `${github.gitUrl}/${owner}/work`;
const remoteBranch = async (branch: string) =>
  (await git(bare, 'for-each-ref', '--format=%(objectname)', `refs/heads/${branch}`).catch(() => '')).trim();
const dataDir = join(root, 'data');
const scenarioPath = join(root, 'scenario.json');
await writeFile(
  scenarioPath,
  JSON.stringify({
    turns: [
      {
        toolCalls: [
          {
            id: 'call_work',
            name: 'run_shell',
            input: { command: `echo a >> part-a.txt; sleep 2 # ${token}\necho b >> part-b.txt`, timeout_seconds: 120 },
          },
        ],
      },
      { toolCalls: [{ id: 'call_more', name: 'write_file', input: { path: 'part-c.txt', content: 'c\n' } }] },
      { text: 'All parts written.' },
    ],
  }),
);
const env = {
  DATA_DIR: dataDir,
  PORT: '0',
  MODEL_PROVIDER: 'scripted',
  SCRIPTED_SCENARIO: scenarioPath,
  LOG_LEVEL: 'info',
  PATCHBAY_ALLOW_LOCAL_REPOS: 'true',
  SHUTDOWN_GRACE_SECONDS: values.grace,
  GITHUB_APP_ID: String(github.appId),
  GITHUB_APP_PRIVATE_KEY: github.privateKey,
  GITHUB_WEBHOOK_SECRET: 'crash-trials-webhook-secret',
  GITHUB_API_URL: github.apiUrl,
  GITHUB_GIT_URL: github.gitUrl,
};

// Each server leads its own process group, so a Ctrl-C can reach all of it as a terminal's does.
const startServer = (serverEnv: Record<string, string>) => startServerProcess(serverEnv, { detached: true });
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

const api = async <T>(server: ServerProcess, path: string, init?: RequestInit): Promise<T> => {
  const response = await fetch(`${server.url}${path}`, { ...init, headers: { 'content-type': 'application/json' } });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
};
const events = (server: ServerProcess, id: string) =>
  api<StoredEvent[]>(server, `/api/sessions/${id}/events?format=json`);

const postmasterPid = () => Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
const workspaceHead = (id: string, branch: string) => {
  try {
    return readFileSync(join(dataDir, 'workspaces', id, '.git', 'refs', 'heads', branch), 'utf8').trim();
  } catch {
    return '';
  }
};

/** Processes left over: the databases on our data directories, sandboxes and commands of our scenarios. */
function orphans(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    if (Number(pid) === process.pid) continue;
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue;
    }
    if (command.includes(root) || command.includes(token)) found.push(`${pid} ${command.slice(0, 80)}`);
  }
  return found;
}

let server = await startServer(env);
const started = Date.now();
const loadAtStart = loadavg()
  .map((x) => x.toFixed(1))
  .join(' ');
const trials: Trial[] = [];

// A run with no kill first: how long a session takes, for the random kill moments.
const baseline = await runSession(server);
const baselineDone = await until(async () => {
  const s = await api<SessionRecord>(server, `/api/sessions/${baseline}`);
  return terminal(s) && s;
}, 180_000);
const baselineMs = baselineDone ? Date.parse(baselineDone.updatedAt) - Date.parse(baselineDone.createdAt) : 15_000;

async function runSession(target: ServerProcess): Promise<string> {
  const { id } = await api<{ id: string }>(target, '/api/sessions', {
    method: 'POST',
    body: JSON.stringify({
      repo: repoUrl,
      prompt: 'Write the three parts',
      author: { name: 'Trial', email: 'trial@example.com' },
    }),
  });
  return id;
}

/** Whether the pushed branch holds every part once, and how many parts were written twice or more. */
async function pushedWork(branch: string | null): Promise<{ workComplete: boolean; effectsTwice: number }> {
  if (!branch) return { workComplete: false, effectsTwice: 0 };
  const tip = await remoteBranch(branch);
  if (!tip) return { workComplete: false, effectsTwice: 0 };
  const shown = await Promise.all(
    ['part-a.txt', 'part-b.txt', 'part-c.txt'].map((file) => git(bare, 'show', `${tip}:${file}`).catch(() => '')),
  );
  return {
    workComplete: shown[0] === 'a' && shown[1] === 'b' && shown[2] === 'c',
    effectsTwice: shown.filter((text) => text.split('\n').filter(Boolean).length > 1).length,
  };
}

let fleet: Awaited<ReturnType<typeof startFleet>> | undefined;
const fleetEnv = Object.fromEntries(
  Object.entries(env).filter(([key]) => !['DATA_DIR', 'PORT', 'SHUTDOWN_GRACE_SECONDS'].includes(key)),
);

let fanOut: Awaited<ReturnType<typeof startFanOut>> | undefined;

for (const [index, kind] of kinds.entries()) {
  if (kind === 'fan-out') {
    fanOut ??= await startFanOut({
      root,
      env,
      repoUrl,
      token,
      bare,
      pulls: () => github.pulls,
      random,
    });
    const { children, childPrs, crashed, ...ran } = await fanOut.trial();
    trials.push({
      kind,
      ...ran,
      outcome: ran.outcome as Trial['outcome'],
      children,
      // A pull request of a child on the parent's repository is one too many.
      prs: ran.prs + childPrs,
      ...(crashed && { crashed: ['the fan-out server exited on its own'] }),
    });
    const t = trials.at(-1)!;
    process.stderr.write(
      `trial ${index + 1}/${kinds.length} ${kind}: ${t.outcome}, children ${children.completed}/${children.expected} completed (${children.rows} rows, ${children.spawnedEvents} subtasks-spawned, ${children.endedEvents} subtask-ended), ${t.duplicates.length} dup, ${t.gaps} gaps, work ${t.workComplete ? 'pushed' : 'MISSING'}, ${t.effectsTwice} effects twice, ${t.prs} PR${t.prRecorded ? '' : ' (not in the log)'}` +
        `${t.interrupted ? '' : ', killed after the children ended'}${t.recoveryMs !== undefined ? `, first child resumed ${t.recoveryMs} ms after the restart` : ''}\n`,
    );
    continue;
  }
  if (fleetKinds.includes(kind)) {
    fleet ??= await startFleet({ root, env: fleetEnv });
    const ran = await fleet.trial(kind as FleetKind, repoUrl);
    const work = await pushedWork(ran.session.branch);
    trials.push({
      kind,
      outcome: ran.outcome as Trial['outcome'],
      duplicates: duplicatesIn(ran.events),
      gaps: seqGaps(ran.events),
      ...work,
      prs: github.pulls.filter((p) => ran.session.branch && p.head === ran.session.branch).length,
      prRecorded: ran.events.some((e) => e.event.type === 'pr-opened'),
      ...(ran.error && { error: ran.error }),
      interrupted: ran.events.some((e) => e.event.type === 'run-resumed'),
      ...(ran.recoveryMs !== undefined && { recoveryMs: ran.recoveryMs }),
      ...(ran.landedAfterResume !== undefined && { landedAfterResume: ran.landedAfterResume }),
    });
    const t = trials.at(-1)!;
    process.stderr.write(
      `trial ${index + 1}/${kinds.length} ${kind}: ${t.outcome}, ${t.duplicates.length} dup, ${t.gaps} gaps, work ${t.workComplete ? 'pushed' : 'MISSING'}, ${t.effectsTwice} effects twice, ${t.prs} PR${t.prRecorded ? '' : ' (not in the log)'}` +
        `${t.recoveryMs !== undefined ? `, ${kind === 'pause-past-lease' ? 'taken over' : 'first new event'} ${t.recoveryMs} ms after the ${kind === 'pause-past-lease' ? 'pause' : 'database came back'}` : ''}${t.landedAfterResume !== undefined ? `, ${t.landedAfterResume} events landed after SIGCONT` : ''}\n`,
    );
    continue;
  }
  const id = await runSession(server);
  let crashed: string[] | undefined;
  let expectedExit = false;
  const watched = server;
  void watched.exited.then(() => {
    if (!expectedExit)
      crashed = linesAboveInfo(watched.lines())
        .slice(-5)
        .map((l) => l.raw ?? `${String(l.msg)} ${JSON.stringify(l.err ?? '').slice(0, 200)}`);
  });
  const has = async (type: string) => (await events(server, id)).some((e) => e.event.type === type);
  let restartNeeded = true;
  let exitCode: number | null | undefined;
  let shutdownMs: number | undefined;
  let aboveInfo: number | undefined;
  let databaseLeft: boolean | undefined;
  const victim = server;

  const branchOf = async () => {
    const ready = await until(
      async () => (await events(server, id)).find((e) => e.event.type === 'workspace-ready'),
      120_000,
    );
    return ready?.event.type === 'workspace-ready' ? ready.event.branch : '';
  };
  /** Until the workspace's branch moved past its base but the push has not reached GitHub. */
  const committedNotPushed = async () => {
    const branch = await branchOf();
    const baseHead = workspaceHead(id, branch);
    await until(
      async () => {
        const head = workspaceHead(id, branch);
        return head !== '' && head !== baseHead && (await remoteBranch(branch)) === '';
      },
      120_000,
      5,
    );
  };
  /** SIGTERM to the server (an orchestrator), or SIGINT to its whole group (a terminal's Ctrl-C). */
  const sigterm = async (how: 'sigterm' | 'ctrl-c' = 'sigterm') => {
    const signalled = Date.now();
    const shutdownFrom = victim.lines().length;
    const database = postmasterPid();
    expectedExit = true;
    if (how === 'ctrl-c') process.kill(-victim.pid, 'SIGINT');
    else victim.child.kill('SIGTERM');
    exitCode = (await victim.exited).code;
    shutdownMs = Date.now() - signalled;
    databaseLeft = alive(database);
    const above = linesAboveInfo(victim.lines().slice(shutdownFrom));
    aboveInfo = above.length;
    for (const l of above)
      process.stderr.write(
        `  above info at SIGTERM: ${l.raw ?? `${String(l.msg)} ${JSON.stringify(l.err ?? '').slice(0, 300)}`}\n`,
      );
    // A slow shutdown: say what it was doing.
    if (shutdownMs > 10_000 || values.verbose) {
      for (const l of victim.lines().slice(shutdownFrom))
        process.stderr.write(
          `    ${typeof l.time === 'number' ? l.time - signalled : '?'} ms: ${l.raw ?? `${String(l.msg)}${l.sessions ? ` ${JSON.stringify(l.sessions)}` : ''}`}\n`,
        );
    }
  };

  switch (kind) {
    case 'random-kill':
      await sleep(random() * baselineMs);
      expectedExit = true;
      victim.child.kill('SIGKILL');
      break;
    case 'kill-tool-running':
      await until(async () => readdirSync(join(dataDir, 'workspaces', id)).includes('part-a.txt'), 120_000);
      expectedExit = true;
      victim.child.kill('SIGKILL');
      break;
    case 'kill-after-commit':
      // The commit is made in the workspace before the push: kill when the branch moves there.
      await committedNotPushed();
      expectedExit = true;
      victim.child.kill('SIGKILL');
      break;
    case 'kill-after-push': {
      // GitHub has the branch, the log does not say so yet (branch-pushed is written after the push).
      const branch = await branchOf();
      await until(
        async () => {
          const tip = await remoteBranch(branch);
          return tip !== '' && tip === workspaceHead(id, branch);
        },
        120_000,
        5,
      );
      expectedExit = true;
      victim.child.kill('SIGKILL');
      break;
    }
    case 'kill-in-pr-create': {
      // GitHub takes the PR request and creates it, but the answer never reaches the server.
      let killed: () => void = () => undefined;
      const landed = new Promise<void>((resolve) => (killed = resolve));
      github.hooks.beforePullCreate = async () => {
        github.hooks.beforePullCreate = undefined;
        expectedExit = true;
        victim.child.kill('SIGKILL');
        await victim.exited;
        killed();
      };
      await Promise.race([
        landed,
        until(async () => terminal(await api<SessionRecord>(server, `/api/sessions/${id}`)), 180_000, 100),
      ]);
      github.hooks.beforePullCreate = undefined;
      if (!expectedExit) restartNeeded = false;
      break;
    }
    case 'kill-after-diff-updated':
      // Written with branch-pushed, before the PR step and the finish.
      await until(() => has('diff-updated'), 120_000, 5);
      expectedExit = true;
      victim.child.kill('SIGKILL');
      break;
    case 'kill-mid-git':
      // A git command killed with the server leaves its lock behind (git does not clean up after
      // SIGKILL): kill while the agent's command runs, and leave the lock a killed `git commit` would.
      await until(async () => readdirSync(join(dataDir, 'workspaces', id)).includes('part-a.txt'), 120_000);
      expectedExit = true;
      victim.child.kill('SIGKILL');
      await victim.exited;
      await writeFile(join(dataDir, 'workspaces', id, '.git', 'index.lock'), '');
      break;
    case 'kill-after-checkpoint': {
      // The command has finished and the checkpoint after it is being taken (the workspace's
      // checkpoint ref moves): kill a moment later, before the call's result is recorded.
      const ref = join(dataDir, 'workspaces', id, '.git', 'refs', 'patchbay', 'checkpoint');
      const read = () => {
        try {
          return readFileSync(ref, 'utf8');
        } catch {
          return '';
        }
      };
      await until(async () => readdirSync(join(dataDir, 'workspaces', id)).includes('part-b.txt'), 120_000, 2);
      const before = read();
      await until(async () => read() !== before, 30_000, 2);
      await sleep(random() * 100);
      expectedExit = true;
      victim.child.kill('SIGKILL');
      break;
    }
    case 'kill-database':
      await until(async () => readdirSync(join(dataDir, 'workspaces', id)).includes('part-a.txt'), 120_000);
      process.kill(postmasterPid(), 'SIGKILL');
      restartNeeded = false;
      break;
    case 'sigterm':
      await until(async () => readdirSync(join(dataDir, 'workspaces', id)).includes('part-a.txt'), 120_000);
      await sigterm();
      break;
    case 'sigterm-random':
      await sleep(random() * baselineMs);
      await sigterm();
      break;
    case 'sigterm-after-commit':
      await committedNotPushed();
      await sigterm();
      break;
    case 'ctrl-c-idle':
      // Nothing running: the session has ended before the Ctrl-C.
      await until(async () => terminal(await api<SessionRecord>(server, `/api/sessions/${id}`)), 180_000, 100);
      await sigterm('ctrl-c');
      break;
    case 'ctrl-c-busy':
      await until(async () => readdirSync(join(dataDir, 'workspaces', id)).includes('part-a.txt'), 120_000);
      await sigterm('ctrl-c');
      break;
  }

  let spawnedAt = Date.now();
  let bootMs: number | undefined;
  let phases: Trial['phases'];
  // A server that died on its own (a crash) is restarted like a killed one, and counted.
  if (!restartNeeded && victim.child.exitCode !== null) restartNeeded = true;
  if (restartNeeded) {
    await victim.exited;
    spawnedAt = Date.now();
    server = await startServer(env);
    bootMs = Date.now() - spawnedAt;
    const at = (match: (l: LogLine) => boolean) => {
      const line = server.lines().find((l) => typeof l.time === 'number' && match(l));
      return line ? (line.time as number) - spawnedAt : NaN;
    };
    phases = {
      loaded: at(() => true),
      database: at((l) => l.msg === 'embedded PostgreSQL is up'),
      listening: at((l) => String(l.msg).startsWith('Server listening')),
    };
  }
  let done = await until(
    async () => {
      const s = await api<SessionRecord>(server, `/api/sessions/${id}`);
      return terminal(s) && s;
    },
    180_000,
    100,
  );
  if (!done && server.child.exitCode !== null) {
    // Crashed after the restart: restart once more so the table can still read the log.
    server = await startServer(env);
    done = await until(
      async () => {
        const s = await api<SessionRecord>(server, `/api/sessions/${id}`);
        return terminal(s) && s;
      },
      180_000,
      100,
    );
  }
  const session = done ?? (await api<SessionRecord>(server, `/api/sessions/${id}`));
  const log = await events(server, id);
  const resumed = log.find((e) => e.event.type === 'run-resumed' && Date.parse(e.at) >= spawnedAt - 1000);
  const { workComplete, effectsTwice } = await pushedWork(session.branch);
  trials.push({
    kind,
    ...(crashed && { crashed }),
    outcome: done ? (session.status as Trial['outcome']) : 'stuck',
    duplicates: duplicatesIn(log),
    gaps: seqGaps(log),
    workComplete,
    effectsTwice,
    prs: github.pulls.filter((p) => session.branch && p.head === session.branch).length,
    prRecorded: log.some((e) => e.event.type === 'pr-opened'),
    ...(session.error && { error: session.error }),
    interrupted: resumed !== undefined,
    ...(resumed && { recoveryMs: Date.parse(resumed.at) - spawnedAt }),
    ...(resumed && bootMs !== undefined && { bootMs }),
    ...(resumed && phases && { phases }),
    ...(exitCode !== undefined && { exitCode }),
    ...(shutdownMs !== undefined && { shutdownMs }),
    ...(aboveInfo !== undefined && { aboveInfo }),
    ...(databaseLeft !== undefined && { databaseLeft }),
  });
  const t = trials.at(-1)!;
  if (values.verbose && t.outcome !== 'completed')
    for (const l of server.lines().filter((l) => JSON.stringify(l).includes(id) || JSON.stringify(l).includes('lock')))
      process.stderr.write(`    ${JSON.stringify(l).slice(0, 400)}\n`);
  process.stderr.write(
    `trial ${index + 1}/${kinds.length} ${kind}: ${t.outcome}${t.crashed ? ' (server crashed)' : ''}, ${t.duplicates.length} dup, ${t.gaps} gaps, work ${t.workComplete ? 'pushed' : 'MISSING'}, ${t.effectsTwice} effects twice, ${t.prs} PR${t.prRecorded ? '' : ' (not in the log)'}` +
      `${t.recoveryMs !== undefined ? `, resumed ${t.recoveryMs} ms after the restart (boot ${t.bootMs ?? '-'} ms${t.phases ? `: loaded ${t.phases.loaded}, database up ${t.phases.database}, listening ${t.phases.listening}` : ''})` : ''}${t.exitCode !== undefined ? `, stopped: exit ${t.exitCode} in ${t.shutdownMs} ms, ${t.aboveInfo} lines > info${t.databaseLeft ? ', DATABASE LEFT RUNNING' : ''}` : ''}\n`,
  );
}

// Final shutdown, then look for anything left behind.
const fleetCrashes = fleet?.crashed() ?? [];
await fleet?.stop();
await fanOut?.stop();
const finalFrom = server.lines().length;
server.child.kill('SIGTERM');
const finalExit = (await server.exited).code;
const finalAboveInfo = linesAboveInfo(server.lines().slice(finalFrom)).length;
await sleep(1000);
const left = orphans();

const percentile = (xs: number[], p: number) => {
  if (xs.length === 0) return undefined;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};
const fmt = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
const rows = [...new Set(kinds)].map((kind) => {
  const of = trials.filter((t) => t.kind === kind);
  const recovery = of.flatMap((t) => (t.recoveryMs === undefined ? [] : [t.recoveryMs]));
  const sigterm = of.filter((t) => t.exitCode !== undefined);
  return [
    kind,
    of.length,
    of.filter((t) => t.outcome === 'completed').length,
    of.filter((t) => t.outcome === 'failed').length,
    of.filter((t) => !['completed', 'failed'].includes(t.outcome)).length,
    of.filter((t) => t.crashed).length,
    of.reduce((n, t) => n + t.duplicates.length, 0),
    of.reduce((n, t) => n + t.gaps, 0),
    of.filter((t) => t.workComplete).length,
    of.reduce((n, t) => n + t.effectsTwice, 0),
    of.some((t) => t.landedAfterResume !== undefined) ? of.reduce((n, t) => n + (t.landedAfterResume ?? 0), 0) : '-',
    of.filter((t) => t.prs === 1 && t.prRecorded).length,
    of.reduce((n, t) => n + Math.max(0, t.prs - 1), 0),
    of.filter((t) => t.interrupted).length,
    fmt(percentile(recovery, 50)),
    fmt(percentile(recovery, 100)),
    fmt(
      percentile(
        of.flatMap((t) => (t.bootMs === undefined ? [] : [t.bootMs])),
        50,
      ),
    ),
    fmt(
      percentile(
        of.flatMap((t) => (t.bootMs === undefined || t.recoveryMs === undefined ? [] : [t.recoveryMs - t.bootMs])),
        50,
      ),
    ),
    sigterm.length ? sigterm.map((t) => t.exitCode).join(',') : '-',
    sigterm.length ? sigterm.reduce((n, t) => n + (t.aboveInfo ?? 0), 0) : '-',
    sigterm.length
      ? fmt(
          percentile(
            sigterm.map((t) => t.shutdownMs!),
            50,
          ),
        )
      : '-',
    sigterm.length ? sigterm.filter((t) => t.databaseLeft).length : '-',
  ];
});
const header = [
  'kind',
  'trials',
  'completed',
  'failed',
  'stuck',
  'crashes',
  'dup events',
  'seq gaps',
  'work pushed',
  'effects twice',
  'landed after SIGCONT',
  'one PR',
  'extra PRs',
  'resumed',
  'recovery p50',
  'recovery max',
  'boot p50',
  'up→resumed p50',
  'stop exits',
  'lines > info',
  'shutdown p50',
  'db left',
];
// Resume after a restart (spawned → the run's first new event); the fleet kinds measure a take-over instead.
const all = trials
  .filter((t) => !fleetKinds.includes(t.kind))
  .flatMap((t) => (t.recoveryMs === undefined ? [] : [t.recoveryMs]));
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
const line = (cells: (string | number)[]) => `| ${cells.map((c, i) => String(c).padEnd(widths[i]!)).join(' | ')} |`;
console.log(
  `\ncrash trials: ${trials.length} trials (+1 baseline run of ${fmt(baselineMs)}), ${fmt(Date.now() - started)} in all, seed ${values.seed}, load average ${loadAtStart} at the start`,
);
console.log(line(header));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const row of rows) console.log(line(row));
console.log(
  `all: ${trials.filter((t) => t.outcome === 'completed').length}/${trials.length} completed, ` +
    `${trials.reduce((n, t) => n + t.duplicates.length, 0)} duplicated events, ${trials.reduce((n, t) => n + t.gaps, 0)} seq gaps, ` +
    `${trials.filter((t) => t.workComplete).length}/${trials.length} with all work pushed, ${trials.reduce((n, t) => n + t.effectsTwice, 0)} effects applied twice, ` +
    `${trials.reduce((n, t) => n + (t.landedAfterResume ?? 0), 0)} events landed after a paused worker resumed, ` +
    `${trials.filter((t) => t.prs === 1 && t.prRecorded).length}/${trials.length} with one PR (recorded), ${trials.reduce((n, t) => n + Math.max(0, t.prs - 1), 0)} extra PRs, resume after restart p50 ${fmt(percentile(all, 50))} (max ${fmt(percentile(all, 100))}, time to the session's first new event), ` +
    `${trials.filter((t) => t.crashed).length + fleetCrashes.length} server crashes, ${trials.filter((t) => t.databaseLeft).length} databases left running by a stopped server, final shutdown exit ${finalExit} with ${finalAboveInfo} lines above info, ${left.length} orphaned processes`,
);
{
  const booted = trials.flatMap((t) => (t.phases ? [t.phases] : []));
  const p50 = (pick: (p: NonNullable<Trial['phases']>) => number) =>
    fmt(
      percentile(
        booted.map(pick).filter((x) => !Number.isNaN(x)),
        50,
      ),
    );
  if (booted.length)
    console.log(
      `restarts: spawned → first log line (Node, modules) p50 ${p50((p) => p.loaded)}, → embedded database up ${p50((p) => p.database - p.loaded)}, → listening (migrations, queue, server) ${p50((p) => p.listening - p.database)}; load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
}
const fanned = trials.flatMap((t) => (t.children ? [{ ...t, children: t.children }] : []));
if (fanned.length) {
  const sum = (pick: (c: NonNullable<Trial['children']>) => number) => fanned.reduce((n, t) => n + pick(t.children), 0);
  console.log(
    `fan-out: ${fanned.filter((t) => t.outcome === 'completed').length}/${fanned.length} parents completed, ` +
      `${sum((c) => c.completed)}/${sum((c) => c.expected)} children completed, ${sum((c) => Math.max(0, c.expected - c.rows))} children lost, ` +
      `${sum((c) => Math.max(0, c.rows - c.expected))} made twice, ${fanned.filter((t) => childrenRight(t.children)).length}/${fanned.length} with subtasks-spawned once and subtask-ended once per child, ` +
      `${fanned.filter((t) => t.interrupted).length}/${fanned.length} killed while a child ran`,
  );
}
for (const t of trials.filter((t) => t.duplicates.length))
  console.log(`  duplicates in a ${t.kind} trial: ${t.duplicates.join(', ')}`);
for (const t of trials.filter((t) => t.crashed))
  console.log(`  server crashed in a ${t.kind} trial: ${t.crashed!.join(' | ')}`);
for (const o of left) console.log(`  orphan: ${o}`);
for (const c of fleetCrashes) console.log(`  fleet process crashed: ${c}`);

for (const t of trials.filter((t) => t.outcome !== 'completed' || !t.workComplete))
  console.log(`  ${t.kind} trial ended ${t.outcome}${t.error ? `: ${t.error}` : ''}`);
console.log(
  `  GitHub refused: ${github.refused.length === 0 ? 'nothing' : JSON.stringify(github.refused.slice(0, 5))}`,
);

await github.close();
await remote.cleanup();
// A killed server leaves its workspaces' file systems mounted (as root): unmounted before the rm.
await removeDataDir(root);
process.exitCode =
  trials.every(
    (t) =>
      t.outcome === 'completed' &&
      !t.crashed &&
      t.workComplete &&
      t.effectsTwice === 0 &&
      (t.landedAfterResume ?? 0) === 0 &&
      t.prs === 1 &&
      t.prRecorded &&
      !t.databaseLeft &&
      (t.exitCode ?? 0) === 0 &&
      !t.aboveInfo &&
      (!t.children || (childrenRight(t.children) && t.children.completed === t.children.expected)),
  ) &&
  left.length === 0 &&
  fleetCrashes.length === 0
    ? 0
    : 1;

/** One child row per task, the spawn recorded once and each child's end once. */
function childrenRight(c: NonNullable<Trial['children']>): boolean {
  return c.rows === c.expected && c.spawnedEvents === 1 && c.endedEvents === c.expected;
}
