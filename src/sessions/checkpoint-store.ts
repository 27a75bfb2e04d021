import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { CheckpointStore, WorkCheckpoint } from '../harness/checkpoint/checkpoint-store.ts';
import { leaseLost, type RunLease } from './run-leases.ts';

/**
 * Writes the checkpoint in the caller's transaction, unless the stored one has a higher step.
 * `epoch` is the run's that took it, kept on the row.
 */
export async function saveCheckpoint(db: Kysely<Database> | Transaction<Database>, sessionId: string, checkpoint: WorkCheckpoint, epoch?: number): Promise<void> {
  const values = {
    step: checkpoint.step,
    head: checkpoint.head,
    tree: checkpoint.tree,
    branch: checkpoint.branch,
    base_branch: checkpoint.baseBranch,
    base_commit: checkpoint.baseCommit,
    bundle: checkpoint.bundle,
    unavailable: checkpoint.unavailable ?? null,
    created_at: new Date(),
    run_epoch: epoch ?? null,
  };
  await db
    .insertInto('session_checkpoints')
    .values({ session_id: sessionId, ...values })
    .onConflict((oc) => oc.column('session_id').doUpdateSet(values).where(sql<number>`session_checkpoints.step`, '<=', checkpoint.step))
    .execute();
}

/**
 * The latest work checkpoint of each session, in `session_checkpoints` (migration 011). With a
 * lease, a save lands only while the lease's epoch is the session's (checked under the session's
 * row lock, which a take-over waits for): a run that was taken over cannot replace the new run's work.
 */
export function createCheckpointStore(db: Kysely<Database>, lease?: RunLease): CheckpointStore {
  return {
    async latest(sessionId) {
      const row = await db.selectFrom('session_checkpoints').selectAll().where('session_id', '=', sessionId).executeTakeFirst();
      if (!row) return undefined;
      return {
        step: Number(row.step),
        head: row.head,
        tree: row.tree,
        branch: row.branch,
        baseBranch: row.base_branch,
        baseCommit: row.base_commit,
        bundle: row.bundle,
        ...(row.unavailable !== null && { unavailable: row.unavailable }),
      } satisfies WorkCheckpoint;
    },
    async save(sessionId, checkpoint) {
      if (!lease) return saveCheckpoint(db, sessionId, checkpoint);
      await db.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('sessions').select('run_epoch').where('id', '=', sessionId).forUpdate().executeTakeFirst();
        if (Number(row?.run_epoch) !== lease.epoch) throw leaseLost(lease, row && Number(row.run_epoch), 'a checkpoint');
        await saveCheckpoint(trx, sessionId, checkpoint, lease.epoch);
      });
    },
  };
}
