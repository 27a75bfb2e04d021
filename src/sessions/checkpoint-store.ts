import { sql, type Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import type { CheckpointStore, WorkCheckpoint } from '../harness/checkpoint/checkpoint-store.ts';

/** The latest work checkpoint of each session, in `session_checkpoints` (migration 011). */
export function createCheckpointStore(db: Kysely<Database>): CheckpointStore {
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
      };
      await db
        .insertInto('session_checkpoints')
        .values({ session_id: sessionId, ...values })
        .onConflict((oc) => oc.column('session_id').doUpdateSet(values).where(sql<number>`session_checkpoints.step`, '<=', checkpoint.step))
        .execute();
    },
  };
}
