import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDLE_IN_TRANSACTION_MS, openDatabase } from '../../db/database.ts';
import type { Actor } from '../../src/core/actor.ts';
import type { StepCheckpoint } from '../../src/core/work-checkpoint.ts';
import type { HarnessDeps } from '../../src/harness/run-session.ts';
import { createCheckStore } from '../../src/sessions/harness-stores/pg-check-store.ts';
import { createCheckpointStore } from '../../src/sessions/harness-stores/pg-checkpoint-store.ts';
import { fencedHarness } from '../../src/sessions/worker/fenced-harness.ts';
import { createKnowledgeStore } from '../../src/sessions/harness-stores/pg-knowledge-store.ts';
import { createModalRecordStore } from '../../src/sessions/harness-stores/modal-record-store.ts';
import { fencedRunLog } from '../../src/sessions/worker/fenced-harness.ts';
import { createRunLeases, type RunLease } from '../../src/sessions/worker/run-leases.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase, databaseTargets } from '../helpers/test-database.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice' };
const silent = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const checkpoint = (step: number, head: string) => ({
  step,
  head,
  tree: head,
  branch: 'b',
  baseBranch: 'main',
  baseCommit: 'c0',
  bundle: Buffer.from(head),
  wip: `wip-${head}`,
});
/** A step's checkpoint as an increment on the chain that ends at the checkpoint of `parent`. */
const increment = (step: number, parent: string, head: string): Extract<StepCheckpoint, { kind: 'increment' }> => ({
  kind: 'increment',
  checkpoint: { step, head, tree: head, branch: 'b', baseBranch: 'main', baseCommit: 'c0', wip: `wip-${head}` },
  increment: { parent: `wip-${parent}`, bundle: Buffer.from(`${parent}..${head}`) },
});

describe.each(databaseTargets())('run leases on $name PostgreSQL', (target) => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;

  beforeAll(async () => {
    handle = await createTestDatabase(target);
    store = createSessionStore(handle.db);
  });
  afterAll(() => handle.close());

  const create = (id: string) =>
    store.create({ id, repo: 'r', prompt: 'p', title: 't', requester: alice, thread: { source: 'web' } });
  const taken = async (leases: ReturnType<typeof createRunLeases>, id: string): Promise<RunLease> => {
    const take = await leases.take(id);
    if (take.kind !== 'taken') throw new Error(`expected the lease, got ${JSON.stringify(take)}`);
    return take.lease;
  };

  it('refuses every write of a run once another run took its lapsed lease over, and keeps who wrote what', async () => {
    await create('s-fence');
    const first = createRunLeases({ db: handle.db, owner: 'worker-1', leaseMs: 1_000 });
    const second = createRunLeases({ db: handle.db, owner: 'worker-2', leaseMs: 1_000 });
    const a = await taken(first, 's-fence');
    const runA = fencedRunLog(store, a, silent);
    await runA.transition('s-fence', 'start');
    await runA.commitStep('s-fence', {
      events: [{ event: { type: 'tool-start', callId: 'c1', name: 'run_shell', input: {} } }],
    });
    await createCheckpointStore(handle.db, a).save('s-fence', checkpoint(1, 'h1'));

    // Held and renewed: nobody else gets it.
    expect((await second.take('s-fence')).kind).toBe('held');
    expect(await first.renew(a)).toBe(true);
    // Not renewed (the worker is paused): it lapses on its own and the next run takes it over.
    await sleep(1_200);
    const b = await taken(second, 's-fence');
    expect(b.epoch).toBe(a.epoch + 1);
    const runB = fencedRunLog(store, b, silent);
    await runB.commitStep('s-fence', {
      events: [
        { event: { type: 'tool-end', callId: 'c1', name: 'run_shell', isError: false, output: 'b', durationMs: 1 } },
      ],
    });

    // The first run wakes up: each of its writes is refused, none lands.
    const before = await store.events('s-fence');
    const lost = { code: 'lease_lost' };
    await expect(
      runA.commitStep('s-fence', {
        messages: [{ message: { role: 'tool', toolCallId: 'c1', name: 'run_shell', content: 'a', isError: false } }],
        events: [
          { event: { type: 'tool-end', callId: 'c1', name: 'run_shell', isError: false, output: 'a', durationMs: 1 } },
        ],
      }),
    ).rejects.toMatchObject(lost);
    await expect(runA.transition('s-fence', 'finish', { reason: 'done' })).rejects.toMatchObject(lost);
    await expect(
      runA.replaceTranscript(
        's-fence',
        [],
        [{ event: { type: 'context-compacted', summary: 's', messagesReplaced: 1 } }],
      ),
    ).rejects.toMatchObject(lost);
    await expect(runA.assertCurrent!('s-fence')).rejects.toMatchObject(lost);
    await expect(createCheckpointStore(handle.db, a).save('s-fence', checkpoint(9, 'stale'))).rejects.toMatchObject(
      lost,
    );
    await expect(
      runA.commitStep('s-fence', { checkpoint: { kind: 'whole', checkpoint: checkpoint(10, 'stale') } }),
    ).rejects.toMatchObject(lost);
    await expect(runA.commitStep('s-fence', { checkpoint: increment(11, 'h1', 'stale') })).rejects.toMatchObject(lost);
    expect(await first.renew(a)).toBe(false);
    expect(await store.events('s-fence')).toEqual(before);
    expect(await store.transcript('s-fence')).toEqual([]);
    expect((await createCheckpointStore(handle.db).latest('s-fence'))?.head).toBe('h1');
    expect((await store.get('s-fence'))?.status).toBe('running');

    const epochs = await handle.db
      .selectFrom('session_events')
      .select(['type', 'run_epoch'])
      .where('session_id', '=', 's-fence')
      .orderBy('seq')
      .execute();
    expect(epochs.map((e) => `${e.type}@${e.run_epoch ?? '-'}`)).toEqual([
      'session-created@-',
      'user-message@-',
      `status-changed@${a.epoch}`,
      `tool-start@${a.epoch}`,
      `tool-end@${b.epoch}`,
    ]);
  });

  it('stores a tool result and the checkpoint after it in one write', async () => {
    await create('s-together');
    const leases = createRunLeases({ db: handle.db, owner: 'w', leaseMs: 30_000 });
    const lease = await taken(leases, 's-together');
    const run = fencedRunLog(store, lease, silent);
    await run.commitStep('s-together', {
      messages: [{ message: { role: 'tool', toolCallId: 'c1', name: 'run_shell', content: 'ok', isError: false } }],
      events: [
        { event: { type: 'tool-end', callId: 'c1', name: 'run_shell', isError: false, output: 'ok', durationMs: 1 } },
      ],
      checkpoint: { kind: 'whole', checkpoint: checkpoint(5, 'after-c1') },
    });
    expect((await createCheckpointStore(handle.db).latest('s-together'))?.head).toBe('after-c1');
    // A step that fails (here: an invalid event) stores no checkpoint either.
    await expect(
      run.commitStep('s-together', {
        events: [{ event: { type: 'nonsense' } as never }],
        checkpoint: { kind: 'whole', checkpoint: checkpoint(6, 'after-c2') },
      }),
    ).rejects.toThrow();
    expect((await createCheckpointStore(handle.db).latest('s-together'))?.head).toBe('after-c1');
    await leases.release(lease);
  });

  it('stores an increment on the checkpoint chain with its step; one on a chain that moved on is refused like a lost lease, with its step', async () => {
    await create('s-chain');
    const leases = createRunLeases({ db: handle.db, owner: 'w', leaseMs: 30_000 });
    const lease = await taken(leases, 's-chain');
    const run = fencedRunLog(store, lease, silent);
    const result = (callId: string) => ({
      messages: [
        { message: { role: 'tool' as const, toolCallId: callId, name: 'run_shell', content: 'ok', isError: false } },
      ],
      events: [
        {
          event: { type: 'tool-end' as const, callId, name: 'run_shell', isError: false, output: 'ok', durationMs: 1 },
        },
      ],
    });
    await run.commitStep('s-chain', {
      ...result('c1'),
      checkpoint: { kind: 'whole', checkpoint: checkpoint(1, 'h1') },
    });
    await run.commitStep('s-chain', { ...result('c2'), checkpoint: increment(2, 'h1', 'h2') });
    expect(await createCheckpointStore(handle.db).latest('s-chain')).toMatchObject({
      head: 'h2',
      wip: 'wip-h2',
      bundle: Buffer.from('h1'),
      increments: [Buffer.from('h1..h2')],
    });

    // An increment against h1 again: the chain ends at h2 now, so it cannot land, and its result neither.
    const before = { events: await store.events('s-chain'), transcript: await store.transcript('s-chain') };
    await expect(
      run.commitStep('s-chain', { ...result('c3'), checkpoint: increment(3, 'h1', 'h3') }),
    ).rejects.toMatchObject({ code: 'lease_lost' });
    await expect(
      createCheckpointStore(handle.db, lease).append('s-chain', increment(3, 'h1', 'h3').checkpoint, {
        parent: 'wip-h1',
        bundle: Buffer.from('x'),
      }),
    ).rejects.toMatchObject({ code: 'lease_lost' });
    expect({ events: await store.events('s-chain'), transcript: await store.transcript('s-chain') }).toEqual(before);
    expect(await createCheckpointStore(handle.db).latest('s-chain')).toMatchObject({
      head: 'h2',
      increments: [Buffer.from('h1..h2')],
    });
    // A whole checkpoint (a compaction) starts a new chain: its increments go.
    await run.commitStep('s-chain', {
      ...result('c4'),
      checkpoint: { kind: 'whole', checkpoint: checkpoint(4, 'h4') },
    });
    const latest = await createCheckpointStore(handle.db).latest('s-chain');
    expect(latest).toMatchObject({ head: 'h4', bundle: Buffer.from('h4') });
    expect(latest?.increments).toBeUndefined();
    const epochs = await handle.db
      .selectFrom('session_checkpoints')
      .select('run_epoch')
      .where('session_id', '=', 's-chain')
      .executeTakeFirstOrThrow();
    expect(Number(epochs.run_epoch)).toBe(lease.epoch);
    await leases.release(lease);
  });

  it("records a run's checks, verdicts and lessons only under its lease, through the harness a worker gives the run", async () => {
    await create('s-gates');
    // What the composition root gives the worker; the worker gives each run fencedHarness of it.
    const harness = {
      store,
      gates: { checks: createCheckStore(handle.db), knowledge: createKnowledgeStore(handle.db) },
    } as unknown as HarnessDeps;
    const a = await taken(createRunLeases({ db: handle.db, owner: 'worker-1', leaseMs: 1_000 }), 's-gates');
    const runA = fencedHarness(harness, a, { store, db: handle.db, log: silent }).gates!;
    const check = (commit: string) => ({
      commit,
      phase: 'check' as const,
      name: 'test',
      command: 'npm test',
      outcome: 'passed' as const,
      exitCode: 0,
      durationMs: 5,
      logHead: '',
      logTail: '',
      startedAt: new Date(),
      finishedAt: new Date(),
    });
    const verdict = (commit: string) => ({
      commit,
      attempt: 1,
      outcome: 'passed' as const,
      verdict: null,
      summary: 'ok',
    });
    await runA.checks.addRun('s-gates', check('c-a'));
    await sleep(1_100);
    const b = await taken(createRunLeases({ db: handle.db, owner: 'worker-2', leaseMs: 1_000 }), 's-gates');
    const runB = fencedHarness(harness, b, { store, db: handle.db, log: silent }).gates!;
    await runB.checks.addRun('s-gates', check('c-b'));
    await runB.checks.addVerdict('s-gates', verdict('c-b'));
    await runB.knowledge.addLesson('r', 'learned by the current run');

    // The first run wakes up with what it saw on a workspace that is no longer its own.
    await expect(runA.checks.addRun('s-gates', check('c-stale'))).rejects.toMatchObject({ code: 'lease_lost' });
    await expect(runA.checks.addVerdict('s-gates', verdict('c-stale'))).rejects.toMatchObject({ code: 'lease_lost' });
    await expect(runA.knowledge.addLesson('r', 'stale')).rejects.toMatchObject({ code: 'lease_lost' });
    expect((await runB.checks.runs('s-gates')).map((run) => run.commit)).toEqual(['c-a', 'c-b']);
    expect((await runB.checks.verdicts('s-gates')).map((v) => v.commit)).toEqual(['c-b']);
  });

  it('takes a lease at once after the run that held it gave it back', async () => {
    await create('s-release');
    const leases = createRunLeases({ db: handle.db, owner: 'w', leaseMs: 60_000 });
    const first = await taken(leases, 's-release');
    await leases.release(first);
    const second = await taken(leases, 's-release');
    expect(second.epoch).toBe(first.epoch + 1);
    await leases.release(second);
  });

  it('records a Modal sandbox only under the current epoch: a run that was taken over cannot release or repoint it', async () => {
    await create('s-modal');
    const records = createModalRecordStore(handle.db);
    const first = createRunLeases({ db: handle.db, owner: 'worker-1', leaseMs: 1_000 });
    const a = await taken(first, 's-modal');
    await records.save('s-modal', { sandboxId: 'sb-first', usedAt: new Date(), released: false }, a.epoch);
    await sleep(1_100);
    const b = await taken(createRunLeases({ db: handle.db, owner: 'worker-2', leaseMs: 1_000 }), 's-modal');
    // The new run reattaches under its epoch; the old one wakes and tries to let go of the sandbox.
    await records.save('s-modal', { usedAt: new Date() }, b.epoch);
    await expect(
      records.save('s-modal', { sandboxId: null, imageId: 'im-stale', released: true }, a.epoch),
    ).rejects.toMatchObject({ code: 'lease_lost' });
    expect(await records.get('s-modal')).toMatchObject({ sandboxId: 'sb-first', imageId: null, released: false });
    const row = await handle.db
      .selectFrom('modal_sandboxes')
      .select('run_epoch')
      .where('session_id', '=', 's-modal')
      .executeTakeFirstOrThrow();
    expect(Number(row.run_epoch)).toBe(b.epoch);
  });

  // Run last but one: every other test's lease is given back or lapsed, so the slots are this test's.
  it('counts live leases as run slots, which a dropped connection does not free', async () => {
    await sleep(1_100);
    await create('s-slot-1');
    await create('s-slot-2');
    // The holder on a database handle of its own, closed below as a worker that lost its connections.
    const holderDb = await openDatabase({ url: handle.url, dataDir: '', log: silent, poolSize: 2 });
    const holder = createRunLeases({ db: holderDb.db, owner: 'holder', leaseMs: 2_000, max: 1 });
    const other = createRunLeases({ db: handle.db, owner: 'other', leaseMs: 2_000, max: 1 });
    await taken(holder, 's-slot-1');
    await holderDb.close();
    expect((await other.take('s-slot-2')).kind).toBe('full');
    await sleep(2_200);
    await taken(other, 's-slot-2');
  });

  it('lets a take-over through when the holder froze inside a transaction holding the session row', {
    timeout: IDLE_IN_TRANSACTION_MS + 30_000,
  }, async () => {
    await create('s-frozen');
    const frozenDb = await openDatabase({ url: handle.url, dataDir: '', log: silent, poolSize: 2 });
    const frozen = createRunLeases({ db: frozenDb.db, owner: 'frozen', leaseMs: 1_000 });
    const lease = await taken(frozen, 's-frozen');
    // What a SIGSTOPped worker looks like to PostgreSQL: a transaction that locked the session's row
    // and then says nothing, on a connection that stays open.
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const stuck = frozenDb.db
      .transaction()
      .execute(async (trx) => {
        await trx.selectFrom('sessions').select('id').where('id', '=', 's-frozen').forUpdate().execute();
        locked();
        await sleep(IDLE_IN_TRANSACTION_MS + 10_000);
        await trx.selectFrom('sessions').select('id').execute();
      })
      .catch((error: unknown) => error);
    await isLocked;
    await sleep(1_100);
    const startedAt = Date.now();
    const takeOver = await taken(createRunLeases({ db: handle.db, owner: 'other', leaseMs: 1_000 }), 's-frozen');
    expect(takeOver.epoch).toBe(lease.epoch + 1);
    expect(Date.now() - startedAt).toBeLessThan(IDLE_IN_TRANSACTION_MS + 5_000);
    // When the frozen one wakes, its transaction is gone.
    expect(await stuck).toBeInstanceOf(Error);
    await frozenDb.close();
  });
});
