/**
 * What a checkpoint costs as a session grows: a scripted session of 200 steps, each writing one new
 * 4 KB file (and every tenth committing), checkpointed after every step into the real store on
 * PostgreSQL from a real (bubblewrap) sandbox, two ways in the same run:
 *  - whole: every checkpoint bundles all the work since the base (how checkpoints were stored before
 *    chains), the baseline;
 *  - chain: increments against the previous checkpoint, compacted now and then.
 * Prints bytes stored and milliseconds per checkpoint at steps 1, 50 and 200 (with the median time
 * of the steps around each, times being noisy on a shared machine), the mean and the largest over
 * all steps, and step 200 / step 1 for each (goal for the chain: <= 2).
 * PostgreSQL: DATABASE_URL when set, else an embedded server in a temp directory.
 * Run: npm exec -- node bench/checkpoint-cost.ts
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { openDatabase } from '../db/database.ts';
import { createLocalSandboxProvider } from '../sandbox/index.ts';
import type { CheckpointStore } from '../src/harness/checkpoint/checkpoint-store.ts';
import { checkpointWork, type CheckpointChain } from '../src/harness/checkpoint/checkpoint-work.ts';
import { createCheckpointStore } from '../src/sessions/harness-stores/pg-checkpoint-store.ts';

const STEPS = 200;
const REPORT = [1, 50, 200];
const log = pino({ level: 'silent' });
const dir = await mkdtemp(join(tmpdir(), 'patchbay-bench-checkpoint-'));
const external = process.env.DATABASE_URL;
const database = await openDatabase({ ...(external && { url: external }), dataDir: join(dir, 'db'), log, poolSize: 2 });
const provider = await createLocalSandboxProvider({
  dataDir: join(dir, 'sandboxes'),
  log,
  ttlMinutes: 60,
  mode: 'bwrap',
});
const dbStore = createCheckpointStore(database.db);
const env = {
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};

type Sample = { bytes: number; ms: number; kind: 'whole' | 'increment' };

async function session(mode: 'whole' | 'chain'): Promise<Sample[]> {
  const id = `bench-checkpoint-${mode}`;
  await database.db
    .insertInto('sessions')
    .values({
      id,
      status: 'running',
      repo: 'bench',
      prompt: 'p',
      title: 't',
      requester: JSON.stringify({ source: 'web', id: 'b', name: 'B' }),
      created_at: new Date(),
      updated_at: new Date(),
    })
    .execute();
  const sandbox = await provider.acquire(id, { network: 'none' });
  // A base of 300 files (about 1.2 MB), as a small real repository has.
  const seeded = await sandbox.exec(
    'git init -q -b main . && mkdir -p src && for i in $(seq 1 300); do head -c 3000 /dev/urandom | base64 > src/f$i.txt; done && git add -A && git commit -qm base && git checkout -q -b patchbay/bench',
    { env },
  );
  if (seeded.exitCode !== 0) throw new Error(seeded.stderr);
  const baseCommit = (await sandbox.exec('git rev-parse main')).stdout.trim();
  const samples: Sample[] = [];
  // Records what each checkpoint stores, on the way to the real store.
  let stored = 0;
  const store: CheckpointStore = {
    latest: (sessionId) => dbStore.latest(sessionId),
    save: (sessionId, checkpoint) => {
      stored = checkpoint.bundle?.length ?? 0;
      return dbStore.save(sessionId, checkpoint);
    },
    append: (sessionId, checkpoint, increment) => {
      stored = increment.bundle.length;
      return dbStore.append(sessionId, checkpoint, increment);
    },
  };
  let chain: CheckpointChain | undefined;
  let last: { head: string; tree: string } | undefined;
  for (let step = 1; step <= STEPS; step++) {
    const blob = randomBytes(3000).toString('base64');
    const change = await sandbox.exec(
      `mkdir -p work/d${step % 10} && printf '%s\\n' '${blob}' > work/d${step % 10}/step${step}.txt && printf 'step %s\\n' ${step} >> NOTES.md${step % 10 === 0 ? ` && git add -A && git commit -qm "step ${step}"` : ''}`,
      { env },
    );
    if (change.exitCode !== 0) throw new Error(change.stderr);
    const started = performance.now();
    const result = await checkpointWork({
      sessionId: id,
      sandbox,
      workspaceDir: provider.hostPath(id),
      scratchDir: join(dir, 'scratch'),
      store,
      base: { branch: 'patchbay/bench', baseBranch: 'main', baseCommit },
      step,
      ...(last && { last }),
      ...(mode === 'chain' && chain && { chain }),
      maxBytes: 256 * 1024 * 1024,
      signal: AbortSignal.timeout(120_000),
    });
    samples.push({
      bytes: stored,
      ms: performance.now() - started,
      kind: result.chain && result.chain.increments > 0 ? 'increment' : 'whole',
    });
    chain = result.chain;
    last = { head: result.head, tree: result.tree };
  }
  return samples;
}

const fmt = (n: number) => (n >= 10_000 ? `${(n / 1024).toFixed(0)} KiB` : `${n} B`);
try {
  const results = { whole: await session('whole'), chain: await session('chain') };
  for (const [mode, samples] of Object.entries(results)) {
    console.log(`\n${mode}:`);
    for (const step of REPORT) {
      const s = samples[step - 1]!;
      // Times on a shared machine are noisy: the median of the steps around it (within two) as well.
      const near = samples
        .slice(Math.max(0, step - 3), step + 2)
        .map((x) => x.ms)
        .sort((a, b) => a - b);
      console.log(
        `  step ${String(step).padStart(3)}: ${fmt(s.bytes).padStart(9)}  ${s.ms.toFixed(0).padStart(5)} ms (median near it ${near[Math.floor(near.length / 2)]!.toFixed(0)} ms)  (${s.kind})`,
      );
    }
    const bytes = samples.map((s) => s.bytes);
    const ms = samples.map((s) => s.ms);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const compactions = samples.map((s, i) => (s.kind === 'whole' && i > 0 ? i + 1 : 0)).filter(Boolean);
    console.log(
      `  mean: ${fmt(Math.round(mean(bytes)))}, ${mean(ms).toFixed(0)} ms; largest: ${fmt(Math.max(...bytes))}, ${Math.max(...ms).toFixed(0)} ms`,
    );
    if (mode === 'chain')
      console.log(`  compactions (whole bundles after step 1) at steps: ${compactions.join(', ') || 'none'}`);
    console.log(
      `  step 200 / step 1: bytes ${(bytes[199]! / bytes[0]!).toFixed(2)}x, time ${(ms[199]! / ms[0]!).toFixed(2)}x`,
    );
  }
  const total = (mode: 'whole' | 'chain') => results[mode].reduce((sum, s) => sum + s.bytes, 0);
  console.log(
    `\nbytes stored over the session: whole ${fmt(total('whole'))}, chain ${fmt(total('chain'))} (${(total('whole') / total('chain')).toFixed(1)}x less)`,
  );
} finally {
  await provider.close?.();
  await database.close();
  await rm(dir, { recursive: true, force: true });
}
