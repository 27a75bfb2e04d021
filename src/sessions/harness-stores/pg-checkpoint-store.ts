import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { PatchbayError } from '../../core/errors.ts';
import type { StepCheckpoint } from '../../core/work-checkpoint.ts';
import type {
  ChainedCheckpoint,
  CheckpointIncrement,
  CheckpointStore,
  WorkCheckpoint,
} from '../../harness/checkpoint/checkpoint-store.ts';
import { underLease, type RunLease } from '../worker/run-leases.ts';

type Writer = Kysely<Database> | Transaction<Database>;

/** The `session_checkpoints` columns that say where a checkpoint's work stands, written by both writes. */
function positionColumns(checkpoint: ChainedCheckpoint | WorkCheckpoint) {
  return {
    step: checkpoint.step,
    head: checkpoint.head,
    tree: checkpoint.tree,
    branch: checkpoint.branch,
    base_branch: checkpoint.baseBranch,
    base_commit: checkpoint.baseCommit,
  };
}

/**
 * Writes a whole checkpoint in the caller's transaction, unless the stored one has a higher step;
 * a stored one starts a new chain (the increments of the old one go). `epoch` is the run's that
 * took it, kept on the row.
 */
export async function saveCheckpoint(
  db: Writer,
  sessionId: string,
  checkpoint: WorkCheckpoint,
  epoch?: number,
): Promise<void> {
  const values = {
    ...positionColumns(checkpoint),
    bundle: checkpoint.bundle,
    wip: checkpoint.wip ?? null,
    unavailable: checkpoint.unavailable ?? null,
    created_at: new Date(),
    run_epoch: epoch ?? null,
  };
  const stored = await db
    .insertInto('session_checkpoints')
    .values({ session_id: sessionId, ...values })
    .onConflict((oc) =>
      oc.column('session_id').doUpdateSet(values).where(sql<number>`session_checkpoints.step`, '<=', checkpoint.step),
    )
    .returning('session_id')
    .executeTakeFirst();
  if (stored) await db.deleteFrom('session_checkpoint_increments').where('session_id', '=', sessionId).execute();
}

/**
 * Adds an increment to the stored chain in the caller's transaction and makes `checkpoint` the
 * latest, only while the chain still ends at `increment.parent` and has no higher step. False when
 * it did not.
 */
export async function appendCheckpoint(
  db: Writer,
  sessionId: string,
  checkpoint: ChainedCheckpoint,
  increment: CheckpointIncrement,
  epoch?: number,
): Promise<boolean> {
  const row = await db
    .selectFrom('session_checkpoints')
    .select(['step', 'wip', 'bundle'])
    .where('session_id', '=', sessionId)
    .forUpdate()
    .executeTakeFirst();
  if (!row?.bundle || row.wip !== increment.parent || Number(row.step) > checkpoint.step) return false;
  await db
    .insertInto('session_checkpoint_increments')
    .values({
      session_id: sessionId,
      step: checkpoint.step,
      parent: increment.parent,
      wip: checkpoint.wip,
      bundle: increment.bundle,
      run_epoch: epoch ?? null,
    })
    .execute();
  await db
    .updateTable('session_checkpoints')
    .set({
      ...positionColumns(checkpoint),
      wip: checkpoint.wip,
      unavailable: null,
      created_at: new Date(),
      run_epoch: epoch ?? null,
    })
    .where('session_id', '=', sessionId)
    .execute();
  return true;
}

/**
 * Stores the checkpoint a step carries, in the step's transaction (commitStep). An increment whose
 * parent is no longer the chain's end cannot land, and the step with it: the whole work is not at
 * hand here to store instead. Under a lease (whose epoch the caller checked) only the lease's run
 * writes the chain, so a chain that moved on means another run took over its work: refused like a
 * lost lease.
 */
export async function storeStepCheckpoint(
  trx: Transaction<Database>,
  sessionId: string,
  stored: StepCheckpoint,
  fence?: RunLease,
): Promise<void> {
  if (stored.kind === 'whole') return saveCheckpoint(trx, sessionId, stored.checkpoint, fence?.epoch);
  if (await appendCheckpoint(trx, sessionId, stored.checkpoint, stored.increment, fence?.epoch)) return;
  throw chainMoved(sessionId, stored.increment.parent, fence);
}

function chainMoved(sessionId: string, parent: string, fence: RunLease | undefined): PatchbayError {
  const what = `a checkpoint increment was refused: the checkpoint chain of session ${sessionId} no longer ends at ${parent.slice(0, 12)} (another run stored since)`;
  return fence
    ? new PatchbayError('lease_lost', `${what}; run epoch ${fence.epoch} stops here`)
    : new PatchbayError('conflict', what);
}

/**
 * The latest work checkpoint of each session, in `session_checkpoints` (migration 013), with the
 * increments stored after its bundle in `session_checkpoint_increments` (migration 015). With a
 * lease, a write lands only while the lease's epoch is the session's (checked under the session's
 * row lock, which a take-over waits for): a run that was taken over cannot replace the new run's
 * work, and an increment on a chain that moved on is refused like a lost lease.
 */
export function createCheckpointStore(db: Kysely<Database>, lease?: RunLease): CheckpointStore {
  const fenced = <T>(sessionId: string, what: string, write: (trx: Transaction<Database>) => Promise<T>): Promise<T> =>
    underLease(db, lease, sessionId, what, write);
  return {
    async latest(sessionId) {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('session_checkpoints')
          .selectAll()
          .where('session_id', '=', sessionId)
          .executeTakeFirst();
        if (!row) return undefined;
        const increments = await trx
          .selectFrom('session_checkpoint_increments')
          .select('bundle')
          .where('session_id', '=', sessionId)
          .orderBy('step')
          .execute();
        return {
          step: Number(row.step),
          head: row.head,
          tree: row.tree,
          branch: row.branch,
          baseBranch: row.base_branch,
          baseCommit: row.base_commit,
          bundle: row.bundle,
          ...(increments.length > 0 && { increments: increments.map((part) => part.bundle) }),
          ...(row.wip !== null && { wip: row.wip }),
          ...(row.unavailable !== null && { unavailable: row.unavailable }),
        } satisfies WorkCheckpoint;
      });
    },
    async save(sessionId, checkpoint) {
      await fenced(sessionId, 'a checkpoint', (trx) => saveCheckpoint(trx, sessionId, checkpoint, lease?.epoch));
    },
    async append(sessionId, checkpoint, increment) {
      return fenced(sessionId, 'a checkpoint increment', async (trx) => {
        if (await appendCheckpoint(trx, sessionId, checkpoint, increment, lease?.epoch)) return true;
        if (lease) throw chainMoved(sessionId, increment.parent, lease);
        return false;
      });
    },
  };
}
