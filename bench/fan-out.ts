/**
 * Fan-out (issue 22): a parent session whose agent spawns sub-tasks that each take ~10 s of
 * scripted work (a shell command that sleeps, then writes a file), with WORKER_CONCURRENCY=4.
 * Measured in the same run: one sub-task (the baseline) and four. Prints the time from the
 * parent's start to its completion for each, and the ratio (goal: four finish in at most 1.5×
 * the time of one), with how much the children's runs overlapped (from the event log's times).
 *
 *   node bench/fan-out.ts [--seconds 10] [--tasks 4]
 *
 * The whole Patchbay runs in this process (real queue, real local sandboxes, the embedded
 * PostgreSQL under a temporary data directory); the model is scripted, the verifier passes.
 * Loopback only; the repository is a local one.
 */
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import type { Actor } from '../src/core/actor.ts';
import type { SessionRecord } from '../src/core/session-record.ts';
import type { ModelMessage } from '../src/core/transcript.ts';
import { startPatchbay } from '../src/main.ts';
import { createScriptedProvider } from '../src/models/scripted-provider.ts';
import type { ScriptedTurn } from '../src/models/scripted-provider.ts';
import { createRemote } from '../test/git/git-fixture.ts';
import { passingVerdict, scriptedVerifier } from '../test/helpers/scripted-verifier.ts';
import { removeDataDir } from '../test/sandbox/sandbox-test-helpers.ts';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, tasks: { type: 'string', default: '4' } },
});
const SECONDS = Number(values.seconds);
const TASKS = Number(values.tasks);
const requester: Actor = { source: 'web', id: 'bench', name: 'Bench', email: 'bench@example.com' };
const CHILD = /Bench sub-task (\d+):/;

/** The parent spawns `count` sub-tasks, then finishes; each child sleeps, writes its file and finishes. */
function scenario(messages: readonly ModelMessage[]): ScriptedTurn {
  const task = messages.find((m) => m.role === 'user');
  const text = task?.role === 'user' ? task.content : '';
  const done = messages.some((m) => m.role === 'tool');
  const child = CHILD.exec(text);
  if (child) {
    if (done) return { text: `Sub-task ${child[1]} done.` };
    const command = `sleep ${SECONDS} && echo "part ${child[1]}" > part-${child[1]}.txt`;
    return { toolCalls: [{ name: 'run_shell', input: { command, timeout: SECONDS + 60 } }] };
  }
  if (done) return { text: 'All sub-tasks ended.' };
  const count = Number(/spawn (\d+)/.exec(text)?.[1] ?? 1);
  const tasks = Array.from({ length: count }, (_, i) => ({
    title: `part ${i + 1}`,
    prompt: `Bench sub-task ${i + 1}: write part-${i + 1}.txt`,
  }));
  return { toolCalls: [{ name: 'spawn_subtasks', input: { tasks } }] };
}

const remote = await createRemote();
const dataDir = await mkdtemp(join(tmpdir(), 'bench-fan-out-'));
const config = loadConfig({
  DATA_DIR: dataDir,
  PORT: '0',
  LOG_LEVEL: 'silent',
  SANDBOX_EGRESS_ALLOW: 'none',
  WORKER_CONCURRENCY: '4',
  MAX_RUNNING_SESSIONS: '8',
  SUBTASKS_MAX: String(Math.max(TASKS, 5)),
});
const app = await startPatchbay(config, {
  log: pino({ level: 'silent' }),
  work: true,
  model: createScriptedProvider({ scenario }),
  verifierModel: scriptedVerifier(passingVerdict),
  queue: { pollingIntervalSeconds: 0.5 },
});

/** Polls the store until the session has ended. */
async function ended(sessionId: string, timeoutMs: number): Promise<SessionRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const session = await app.store.get(sessionId);
    if (session && ['completed', 'failed', 'cancelled'].includes(session.status)) return session;
    if (Date.now() > deadline) throw new Error(`session ${sessionId} is still ${session?.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Seconds from the parent's start to its completion, and how long all its children ran at once. */
async function fanOut(count: number): Promise<{ seconds: number; overlapSeconds: number; children: number }> {
  const started = Date.now();
  const result = await app.service.start({
    thread: { source: 'web' },
    actor: requester,
    text: `spawn ${count} sub-tasks`,
    repo: remote.remote,
  });
  if (result.kind !== 'started') throw new Error(`the parent did not start: ${result.kind}`);
  const parent = await ended(result.session.id, 600_000);
  const seconds = (Date.now() - started) / 1000;
  if (parent.status !== 'completed') throw new Error(`the parent ended ${parent.status}: ${parent.error}`);
  const children = await app.store.children(parent.id);
  const spans = await Promise.all(children.map((c) => runSpan(c.sessionId)));
  const overlap = Math.min(...spans.map((s) => s.end)) - Math.max(...spans.map((s) => s.start));
  for (const child of children)
    if (child.status !== 'completed') throw new Error(`sub-task ${child.index} ended ${child.status}`);
  return { seconds, overlapSeconds: Math.max(0, overlap) / 1000, children: children.length };
}

/** When a child's run started and when its shell command ended, from its event log's times. */
async function runSpan(sessionId: string): Promise<{ start: number; end: number }> {
  const events = await app.store.events(sessionId, { types: ['tool-start', 'tool-end'] });
  const start = events.find((e) => e.event.type === 'tool-start');
  const end = events.findLast((e) => e.event.type === 'tool-end');
  if (!start || !end) throw new Error(`sub-task session ${sessionId} ran no command`);
  return { start: Date.parse(start.at), end: Date.parse(end.at) };
}

try {
  const one = await fanOut(1);
  const many = await fanOut(TASKS);
  const ratio = many.seconds / one.seconds;
  process.stdout.write(
    [
      `fan-out: sub-tasks of ${SECONDS} s scripted work each, WORKER_CONCURRENCY=4, load ${loadavg()[0]!.toFixed(1)}`,
      `  1 sub-task:  parent done in ${one.seconds.toFixed(1)} s`,
      `  ${TASKS} sub-tasks: parent done in ${many.seconds.toFixed(1)} s; all ${many.children} ran at once for ${many.overlapSeconds.toFixed(1)} s`,
      `  ratio ${TASKS} ÷ 1: ${ratio.toFixed(2)} (goal ≤ 1.5)`,
      '',
    ].join('\n'),
  );
} finally {
  await app.close();
  await removeDataDir(dataDir);
  await remote.cleanup();
}
