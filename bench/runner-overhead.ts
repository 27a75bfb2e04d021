/**
 * The agent runner's own overhead per turn: the time from a model reply to the next model request,
 * minus the time spent inside tools. Measured with every step persisted to a real PostgreSQL (the
 * store the worker uses) and, in the same run, with an in-memory store (no persistence) as the
 * baseline. The model is scripted and answers at once; the one tool returns at once, and its time
 * is measured and subtracted anyway. Prints p50/p99 for both and their ratio.
 *
 * PostgreSQL: DATABASE_URL when set, else an embedded server in a temp directory.
 * Run: npm exec -- node bench/runner-overhead.ts
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { z } from 'zod';
import { createLocalSandboxProvider, type LocalSandboxProvider } from '../sandbox/index.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import { openDatabase } from '../db/database.ts';
import { runAgent, type RunnerLog, type ToolExecutor } from '../src/agent/agent-runner.ts';
import { createToolRegistry } from '../src/agent/tool-registry.ts';
import type { Tool } from '../src/agent/tool.ts';
import type { Actor } from '../src/core/actor.ts';
import { isPatchbayError } from '../src/core/errors.ts';
import type { ModelProvider } from '../src/models/model-provider.ts';
import { createScriptedProvider } from '../src/models/scripted-provider.ts';
import { createSessionStore, type SessionStore } from '../src/sessions/store/session-store.ts';
import { createMemoryRunnerStore } from './_runner-memory-store.ts';

const TURNS = 300;
const WARMUP_TURNS = 40;
const ROUNDS = 2;
const log = pino({ level: 'silent' });
const bench: Actor = { source: 'cli', id: 'bench', name: 'Bench' };

const noop: Tool<{ n: number }> = {
  name: 'noop',
  description: 'Returns at once.',
  inputSchema: z.object({ n: z.number().int() }),
  async execute(input) {
    return { content: `ok ${input.n}` };
  },
};

type Sample = { overheadMs: number[]; toolMs: number[] };

/** One session of `turns` tool turns and a final answer; returns per-turn overhead and tool time. */
async function measure(store: RunnerLog, sessionId: string, sandbox: Sandbox, turns: number): Promise<Sample> {
  const requestAt: number[] = [];
  const replyAt: number[] = [];
  const toolMs: number[] = [];
  let step = 0;
  const scripted = createScriptedProvider({
    scenario: () =>
      step < turns
        ? { text: `step ${step}`, toolCalls: [{ id: `c${step}`, name: 'noop', input: { n: step } }] }
        : { text: 'done' },
  });
  const model: ModelProvider = {
    name: scripted.name,
    model: scripted.model,
    contextWindow: scripted.contextWindow,
    async runTurn(request) {
      requestAt.push(performance.now());
      const result = await scripted.runTurn(request);
      step++;
      replyAt.push(performance.now());
      return result;
    },
  };
  const registry = createToolRegistry([noop]);
  const tools: ToolExecutor = {
    specs: () => registry.specs(),
    async execute(call, ctx) {
      const started = performance.now();
      const output = await registry.execute(call, ctx);
      toolMs.push(performance.now() - started);
      return output;
    },
  };
  const outcome = await runAgent({
    sessionId,
    system: 'bench',
    model,
    tools,
    sandbox,
    runLog: store,
    signal: AbortSignal.timeout(120_000),
    log,
  });
  if (outcome.kind !== 'finished') throw new Error(`the bench session did not finish: ${JSON.stringify(outcome)}`);
  const overheadMs = replyAt.slice(0, -1).map((at, i) => requestAt[i + 1]! - at - (toolMs[i] ?? 0));
  return { overheadMs, toolMs };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

const ms = (n: number) => `${n.toFixed(3)} ms`.padStart(11);

async function sandboxProvider(dataDir: string): Promise<LocalSandboxProvider> {
  try {
    return await createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'bwrap' });
  } catch (error) {
    // The tool runs no command, so a host without bubblewrap can still measure the runner.
    if (!isPatchbayError(error)) throw error;
    return createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'unsafe-local' });
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'patchbay-bench-runner-'));
  const external = process.env.DATABASE_URL;
  const started = performance.now();
  const database = await openDatabase({ ...(external && { url: external }), dataDir: dir, log, poolSize: 4 });
  const pgStore: SessionStore = createSessionStore(database.db);
  const memStore = createMemoryRunnerStore();
  const sandboxes = await sandboxProvider(dir);
  const created: string[] = [];

  const pgSession = async () => {
    const id = `bench-${randomUUID()}`;
    created.push(id);
    await pgStore.create({
      id,
      repo: 'bench/repo',
      prompt: 'bench',
      title: 'bench',
      requester: bench,
      thread: { source: 'cli' },
    });
    await pgStore.transition(id, 'start');
    return id;
  };
  const memSession = async () => {
    const id = `bench-${randomUUID()}`;
    memStore.create(id, 'bench', bench);
    return id;
  };
  const run = async (store: RunnerLog, newSession: () => Promise<string>, turns: number) => {
    const id = await newSession();
    const sandbox = await sandboxes.acquire(id, { network: 'none' });
    try {
      return await measure(store, id, sandbox, turns);
    } finally {
      await sandbox.destroy();
    }
  };

  try {
    await run(memStore, memSession, WARMUP_TURNS);
    await run(pgStore, pgSession, WARMUP_TURNS);
    const pg: Sample = { overheadMs: [], toolMs: [] };
    const mem: Sample = { overheadMs: [], toolMs: [] };
    // Alternate, so drift on a shared machine hits both sides alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const [into, store, newSession] of [
        [pg, pgStore, pgSession],
        [mem, memStore, memSession],
      ] as const) {
        const sample = await run(store, newSession, TURNS / ROUNDS);
        into.overheadMs.push(...sample.overheadMs);
        into.toolMs.push(...sample.toolMs);
      }
    }

    const row = (name: string, s: Sample) =>
      `${name.padEnd(34)}${ms(percentile(s.overheadMs, 50))}${ms(percentile(s.overheadMs, 99))}${ms(s.overheadMs.reduce((a, b) => a + b, 0) / s.overheadMs.length)}${ms(percentile(s.toolMs, 50))}`;
    const where = external ? 'DATABASE_URL' : 'embedded PostgreSQL';
    console.log(
      `Runner overhead per turn: model reply → next model request, tool time subtracted (${TURNS} turns each, after ${WARMUP_TURNS} warm-up turns)`,
    );
    console.log(
      `${''.padEnd(34)}${'p50'.padStart(11)}${'p99'.padStart(11)}${'mean'.padStart(11)}${'tool p50'.padStart(11)}`,
    );
    console.log(row(`persisted (${where})`, pg));
    console.log(row('in memory (no persistence)', mem));
    const ratio = (p: number) => (percentile(pg.overheadMs, p) / percentile(mem.overheadMs, p)).toFixed(1);
    console.log(`ratio persisted / in memory: p50 ×${ratio(50)}, p99 ×${ratio(99)}`);
    console.log(
      `(per turn the runner writes 3 steps: assistant + usage, tool-start, tool result + tool-end; and reads status and inbox)`,
    );
    console.log(`total bench time ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    if (external)
      await database.db
        .deleteFrom('sessions')
        .where('id', 'in', created)
        .execute()
        .catch(() => undefined);
    // Unmounts the workspaces' file systems (as root) before their folder goes.
    await sandboxes.close();
    await database.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
