/**
 * The `fan-out` crash trial (issue 22): its own `patchbay serve` on its own DATA_DIR, with a scripted
 * scenario made for fan-out, so the other kinds keep theirs. Used by crash-trials.ts; loopback only.
 *
 * One turn list serves the parent and its children (the scripted model counts assistant turns):
 * the first turn calls spawn_subtasks with three tasks (a child is refused it: depth 1), the second
 * runs a command that appends to `runs.log` and sleeps, the third ends. Each trial starts a
 * session, waits until its children are spawned, SIGKILLs the server's whole process group (the
 * embedded database, the sandboxes and their commands with it) at a random moment within the
 * fan-out's length as an unbroken run measured it, restarts the server and records: the parent and
 * its children completed, one child row per task, `subtasks-spawned` once and `subtask-ended` once
 * per child on the parent's log, every pushed branch holding its `runs.log` line once (a command
 * applied twice doubles it), one pull request (the parent's: children on its repository open
 * none), and the recovery time (new process spawned → the first child's run taken up again).
 */
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import type { StoredEvent } from '../src/core/events.ts';
import type { SubtaskLine } from '../src/core/subtasks.ts';
import type { SessionRecord } from '../src/core/session-record.ts';
import { git } from '../test/git/git-fixture.ts';
import { passingVerdict } from '../test/helpers/scripted-verifier.ts';
import { startServer, type ServerProcess } from '../test/helpers/server-process.ts';
import { duplicatesIn, seqGaps } from './crash-trials-log.ts';
import { sleep, terminal, until } from './crash-trials-fleet.ts';

const TASKS = [
  { title: 'Part A', prompt: 'Write part A' },
  { title: 'Part B', prompt: 'Write part B' },
  { title: 'Part C', prompt: 'Write part C' },
];

/** What one fan-out trial found, in the words of the crash-trials table. */
export type FanOutTrial = {
  outcome: string;
  error?: string;
  duplicates: string[];
  gaps: number;
  children: {
    /** Tasks asked for, child rows the parent has, of them completed. */
    expected: number;
    rows: number;
    completed: number;
    /** On the parent's log: one `subtasks-spawned`, one `subtask-ended` per child is right. */
    spawnedEvents: number;
    endedEvents: number;
  };
  /** Every pushed branch (parent and children) holds its `runs.log` line. */
  workComplete: boolean;
  /** Branches whose `runs.log` line was written more than once: a command applied twice. */
  effectsTwice: number;
  /** Pull requests on the parent's branch, and on the children's (none is right). */
  prs: number;
  childPrs: number;
  prRecorded: boolean;
  /** The kill landed while a child had not ended yet. */
  interrupted: boolean;
  /** New process spawned → the first `run-resumed` of a child. */
  recoveryMs?: number;
  /** The server ended on its own during the trial. */
  crashed: boolean;
};

const ended = new Set(['completed', 'failed', 'cancelled']);

type Deps = {
  root: string;
  env: Record<string, string>;
  repoUrl: string;
  /** Written into the scenario's command, so a command left running shows among the orphans. */
  token: string;
  /** The bare repository behind the session's GitHub repository, and the pull requests GitHub holds. */
  bare: string;
  pulls: () => readonly { head: string }[];
  random: () => number;
};

type Family = {
  session: SessionRecord & { children: SubtaskLine[] };
  parent: StoredEvent[];
  children: StoredEvent[][];
};

/** Starts the fan-out server and measures one unbroken fan-out, the window the kills land in. */
export async function startFanOut(deps: Deps) {
  const scenarioPath = join(deps.root, 'fan-out-scenario.json');
  await writeFile(scenarioPath, JSON.stringify(fanOutScenario(deps.token)));
  const serverEnv = {
    ...deps.env,
    DATA_DIR: join(deps.root, 'fan-out-data'),
    SCRIPTED_SCENARIO: scenarioPath,
    WORKER_CONCURRENCY: String(TASKS.length),
  };
  const state = { server: await startServer(serverEnv, { detached: true }), serverEnv };
  const baselineId = await startSession(state.server, deps.repoUrl);
  await until(async () => terminal(await session(state.server, baselineId)), 240_000, 200);
  const windowMs = fanOutLength(await events(state.server, baselineId)) ?? 8_000;
  process.stderr.write(`fan-out baseline: children spawned → last ended ${windowMs} ms\n`);
  return {
    trial: () => fanOutTrial(state, deps, windowMs),
    async stop() {
      state.server.child.kill('SIGTERM');
      await Promise.race([state.server.exited, sleep(20_000)]);
      if (state.server.child.exitCode === null) process.kill(-state.server.pid, 'SIGKILL');
    },
  };
}

/** One list of turns for parent and children alike; `token` marks the commands for the orphan search. */
function fanOutScenario(token: string) {
  return {
    turns: [
      { toolCalls: [{ id: 'call_fan', name: 'spawn_subtasks', input: { tasks: TASKS } }] },
      {
        toolCalls: [
          {
            id: 'call_slow',
            name: 'run_shell',
            input: { command: `echo run >> runs.log; sleep 3 # ${token}`, timeout_seconds: 120 },
          },
        ],
      },
      { text: 'Done here.' },
    ],
    verifier: [{ toolCalls: [{ name: 'record_verdict', input: passingVerdict }] }],
  };
}

async function fanOutTrial(
  state: { server: ServerProcess; serverEnv: Record<string, string> },
  deps: Deps,
  windowMs: number,
): Promise<FanOutTrial> {
  const victim = state.server;
  let killed = false;
  let crashed = false;
  void victim.exited.then(() => {
    if (!killed) crashed = true;
  });
  const id = await startSession(victim, deps.repoUrl);
  await until(async () => (await events(victim, id)).some((e) => e.event.type === 'subtasks-spawned'), 120_000, 20);
  await sleep(deps.random() * windowMs);
  const before = await session(victim, id).catch(() => undefined);
  const interrupted = !before || before.children.some((c) => !ended.has(c.status));
  killed = true;
  process.kill(-victim.pid, 'SIGKILL');
  await victim.exited;

  const spawnedAt = Date.now();
  state.server = await startServer(state.serverEnv, { detached: true });
  const done = await until(
    async () => {
      const s = await session(state.server, id);
      return terminal(s) && s;
    },
    240_000,
    100,
  );
  const family = await readFamily(state.server, id);
  return {
    outcome: done ? family.session.status : 'stuck',
    ...(family.session.error && { error: family.session.error }),
    ...measureFamily(family, deps),
    ...(await pushedWork(family.session, deps.bare)),
    interrupted,
    ...resumedAfter(family, spawnedAt),
    crashed,
  };
}

function measureFamily(family: Family, deps: Deps) {
  const { session: parent } = family;
  const count = (type: string) => family.parent.filter((e) => e.event.type === type).length;
  const childBranches = new Set(parent.children.flatMap((c) => (c.branch ? [c.branch] : [])));
  return {
    duplicates: [
      ...duplicatesIn(family.parent),
      ...family.children.flatMap((log, i) => duplicatesIn(log).map((d) => `child ${i + 1} ${d}`)),
    ],
    gaps: seqGaps(family.parent) + family.children.reduce((n, log) => n + seqGaps(log), 0),
    children: {
      expected: TASKS.length,
      rows: parent.children.length,
      completed: parent.children.filter((c) => c.status === 'completed').length,
      spawnedEvents: count('subtasks-spawned'),
      endedEvents: count('subtask-ended'),
    },
    prs: deps.pulls().filter((p) => parent.branch && p.head === parent.branch).length,
    childPrs: deps.pulls().filter((p) => childBranches.has(p.head)).length,
    prRecorded: family.parent.some((e) => e.event.type === 'pr-opened'),
  };
}

/** Whether every branch of the family holds its `runs.log` line, and how many hold it twice or more. */
async function pushedWork(parent: Family['session'], bare: string) {
  const branches = [parent.branch, ...parent.children.map((c) => c.branch)];
  const logs = await Promise.all(
    branches.map((branch) => (branch ? git(bare, 'show', `refs/heads/${branch}:runs.log`).catch(() => '') : '')),
  );
  const lines = logs.map((text) => text.split('\n').filter(Boolean).length);
  return {
    workComplete: branches.length === TASKS.length + 1 && lines.every((n) => n >= 1),
    effectsTwice: lines.filter((n) => n > 1).length,
  };
}

function resumedAfter(family: Family, spawnedAt: number): { recoveryMs?: number } {
  const resumed = family.children
    .flat()
    .filter((e) => e.event.type === 'run-resumed' && Date.parse(e.at) >= spawnedAt - 1000)
    .map((e) => Date.parse(e.at) - spawnedAt);
  return resumed.length ? { recoveryMs: Math.min(...resumed) } : {};
}

/** From the parent's `subtasks-spawned` to its last `subtask-ended`, in an unbroken run. */
function fanOutLength(log: StoredEvent[]): number | undefined {
  const spawned = log.find((e) => e.event.type === 'subtasks-spawned');
  const ended = log.filter((e) => e.event.type === 'subtask-ended').at(-1);
  return spawned && ended ? Date.parse(ended.at) - Date.parse(spawned.at) : undefined;
}

async function readFamily(server: ServerProcess, id: string): Promise<Family> {
  const parent = await session(server, id);
  return {
    session: parent,
    parent: await events(server, id),
    children: await Promise.all(parent.children.map((c) => events(server, c.sessionId))),
  };
}

async function api<T>(server: ServerProcess, path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(`${server.url}${path}`, { ...init, headers: { 'content-type': 'application/json' } });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}
const events = (server: ServerProcess, id: string) =>
  api<StoredEvent[]>(server, `/api/sessions/${id}/events?format=json`);
const session = (server: ServerProcess, id: string) => api<Family['session']>(server, `/api/sessions/${id}`);

async function startSession(server: ServerProcess, repoUrl: string): Promise<string> {
  const { id } = await api<{ id: string }>(server, '/api/sessions', {
    method: 'POST',
    body: JSON.stringify({ repo: repoUrl, prompt: 'Fan out', author: { name: 'Trial', email: 'trial@example.com' } }),
  });
  return id;
}
