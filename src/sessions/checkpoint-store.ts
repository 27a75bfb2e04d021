import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { CheckpointStore, WorkCheckpoint } from '../harness/checkpoint/checkpoint-store.ts';

/**
 * The latest work checkpoint of each session, in `session_checkpoints` (migration 011), with the
 * increments stored after its bundle in `session_checkpoint_increments` (migration 013).
 */
export function createCheckpointStore(db: Kysely<Database>): CheckpointStore {
  return {
    async latest(sessionId) {
      return db.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('session_checkpoints').selectAll().where('session_id', '=', sessionId).executeTakeFirst();
        if (!row) return undefined;
        const increments = await trx.selectFrom('session_checkpoint_increments').select('bundle').where('session_id', '=', sessionId).orderBy('step').execute();
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
      const values = {
        step: checkpoint.step,
        head: checkpoint.head,
        tree: checkpoint.tree,
        branch: checkpoint.branch,
        base_branch: checkpoint.baseBranch,
        base_commit: checkpoint.baseCommit,
        bundle: checkpoint.bundle,
        wip: checkpoint.wip ?? null,
        unavailable: checkpoint.unavailable ?? null,
        created_at: new Date(),
      };
      await db.transaction().execute(async (trx) => {
        const stored = await trx
          .insertInto('session_checkpoints')
          .values({ session_id: sessionId, ...values })
          .onConflict((oc) => oc.column('session_id').doUpdateSet(values).where(sql<number>`session_checkpoints.step`, '<=', checkpoint.step))
          .returning('session_id')
          .executeTakeFirst();
        // A whole checkpoint starts a new chain: the increments of the old one go with it.
        if (stored) await trx.deleteFrom('session_checkpoint_increments').where('session_id', '=', sessionId).execute();
      });
    },
    async append(sessionId, checkpoint, increment) {
      return db.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('session_checkpoints').select(['step', 'wip', 'bundle']).where('session_id', '=', sessionId).forUpdate().executeTakeFirst();
        if (!row?.bundle || row.wip !== increment.parent || Number(row.step) > checkpoint.step) return false;
        await trx.insertInto('session_checkpoint_increments').values({ session_id: sessionId, step: checkpoint.step, parent: increment.parent, wip: checkpoint.wip, bundle: increment.bundle }).execute();
        await trx
          .updateTable('session_checkpoints')
          .set({ step: checkpoint.step, head: checkpoint.head, tree: checkpoint.tree, branch: checkpoint.branch, base_branch: checkpoint.baseBranch, base_commit: checkpoint.baseCommit, wip: checkpoint.wip, unavailable: null, created_at: new Date() })
          .where('session_id', '=', sessionId)
          .execute();
        return true;
      });
    },
  };
}
