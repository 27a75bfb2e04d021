import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandboxProvider, type Sandbox, type SandboxProvider } from '../../sandbox/index.ts';
import type { CheckpointStore } from '../../src/harness/checkpoint/checkpoint-store.ts';
import {
  checkpointWork,
  readWorkState,
  restoreWork,
  type CheckpointChain,
} from '../../src/harness/checkpoint/checkpoint-work.ts';
import { createCheckpointStore } from '../../src/sessions/harness-stores/pg-checkpoint-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';
import { removeDataDir } from '../sandbox/sandbox-test-helpers.ts';

const log = pino({ level: 'silent' });
const dates = {
  GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
  GIT_AUTHOR_NAME: 'Base',
  GIT_AUTHOR_EMAIL: 'base@example.com',
  GIT_COMMITTER_NAME: 'Base',
  GIT_COMMITTER_EMAIL: 'base@example.com',
};
// The same base commit in every workspace (fixed content, names and dates), as a clone of the base branch gives.
const seed =
  'git init -q -b main . && printf "# demo\\n" > README.md && mkdir -p src && printf "old\\n" > src/old.txt && git add -A && git commit -qm base && git checkout -q -b patchbay/work';
// Every kind of change a step makes: new, changed, removed, untracked in new directories, binary, renamed, a commit.
const stepScript = (i: number, blob: string) =>
  [
    `printf 'line %s\\n' ${i} >> notes.md`,
    `mkdir -p deep/d${i % 7} && printf '%s' '${blob}' | base64 -d > deep/d${i % 7}/f${i}.bin`,
    i % 5 === 0 ? `git add notes.md && git commit -qm "step ${i}"` : 'true',
    i % 9 === 0 ? `rm -f deep/d${(i - 6) % 7}/f${i - 6}.bin` : 'true',
    i === 12 ? 'git mv src/old.txt src/renamed.txt && git commit -qm rename' : 'true',
  ].join(' && ');

/**
 * Checkpoints stored as chains (a bundle, then increments against the one before, compacted now and
 * then) restore to exactly the tree and HEAD the workspace had: through the real store on
 * PostgreSQL and the real local sandbox, in a fresh workspace made from the same base.
 */
describe('checkpoint chains', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: CheckpointStore;
  let provider: SandboxProvider & { hostPath?(sessionId: string): string };
  let dataDir: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createCheckpointStore(database.db);
    dataDir = await mkdtemp(join(tmpdir(), 'patchbay-chain-'));
    provider = await createLocalSandboxProvider({ dataDir, log, ttlMinutes: 60, mode: 'bwrap' });
  });
  afterAll(async () => {
    await database?.close();
    await removeDataDir(dataDir);
  });

  const session = async (id: string) => {
    await database.db
      .insertInto('sessions')
      .values({
        id,
        status: 'running',
        repo: 'demo',
        prompt: 'p',
        title: 't',
        requester: JSON.stringify({ source: 'web', id: 'a', name: 'A' }),
        created_at: new Date(),
        updated_at: new Date(),
      })
      .execute();
    const sandbox = await provider.acquire(id, { network: 'none' });
    const seeded = await sandbox.exec(seed, { env: dates });
    expect(seeded.exitCode, seeded.stderr).toBe(0);
    return sandbox;
  };
  const exact = async (sandbox: Sandbox) =>
    (
      await sandbox.exec(
        'git rev-parse HEAD && git status --porcelain=v1 -uall && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum',
      )
    ).stdout;

  it('restores the exact tree from a chain of increments, and after compactions', { timeout: 180_000 }, async () => {
    const sandbox = await session('chain-source');
    const base = (await sandbox.exec('git rev-parse main')).stdout.trim();
    const checkpointBase = { branch: 'patchbay/work', baseBranch: 'main', baseCommit: base };
    let chain: CheckpointChain | undefined;
    let last: { head: string; tree: string } | undefined;
    const kinds: string[] = [];
    const restoredAt = async (label: string) => {
      const checkpoint = (await store.latest('chain-source'))!;
      const target = await session(`chain-${label}`);
      await restoreWork(target, checkpoint, AbortSignal.timeout(60_000));
      expect(await readWorkState(target, AbortSignal.timeout(60_000))).toEqual(
        await readWorkState(sandbox, AbortSignal.timeout(60_000)),
      );
      expect(await exact(target)).toBe(await exact(sandbox));
      return checkpoint;
    };

    for (let step = 1; step <= 70; step++) {
      const result = await sandbox.exec(stepScript(step, randomBytes(700).toString('base64')), { env: dates });
      expect(result.exitCode, result.stderr).toBe(0);
      const stored = await checkpointWork({
        sessionId: 'chain-source',
        sandbox,
        workspaceDir: provider.hostPath!('chain-source'),
        scratchDir: join(dataDir, 'scratch'),
        store,
        base: checkpointBase,
        step,
        ...(last && { last }),
        ...(chain && { chain }),
        maxBytes: 64 * 1024 * 1024,
        signal: AbortSignal.timeout(60_000),
      });
      expect(stored.chain).toBeDefined();
      kinds.push(stored.chain!.increments === 0 ? 'full' : 'increment');
      chain = stored.chain;
      last = { head: stored.head, tree: stored.tree };
      if (step === 20) {
        // Twenty checkpoints in, before any compaction: one whole bundle and 19 increments.
        const checkpoint = await restoredAt('twenty');
        expect(checkpoint.increments).toHaveLength(19);
        // Each increment holds about one step's change (a 700-byte file and a line), not the work so far.
        expect(Math.max(...checkpoint.increments!.map((part) => part.length))).toBeLessThan(
          checkpoint.bundle!.length * 2,
        );
      }
    }
    // A compaction happened (a whole bundle again, its old increments deleted), and more increments followed it.
    const compactions = kinds.map((kind, i) => (kind === 'full' ? i + 1 : 0)).filter((step) => step > 1);
    expect(compactions.length).toBeGreaterThan(0);
    expect(kinds.at(-1)).toBe('increment');
    const checkpoint = await restoredAt('seventy');
    expect(checkpoint.increments!.length).toBe(70 - compactions.at(-1)!);
    expect(
      Number(
        (
          await database.db
            .selectFrom('session_checkpoint_increments')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('session_id', '=', 'chain-source')
            .executeTakeFirstOrThrow()
        ).n,
      ),
    ).toBe(checkpoint.increments!.length);
  });
});
