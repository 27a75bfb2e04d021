import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, ModalSandboxesTable } from '../../../db/schema.ts';
import type { ModalRecordStore, ModalSessionRecord } from '../../../sandbox/modal/modal-records.ts';
import { PatchbayError } from '../../core/errors.ts';
import { currentRunEpoch } from '../store/session-queries.ts';

type Writer = Kysely<Database> | Transaction<Database>;

function toRecord(row: Selectable<ModalSandboxesTable>): ModalSessionRecord {
  return {
    sandboxId: row.sandbox_id,
    imageId: row.image_id,
    snapshotAt: row.snapshot_at ? new Date(row.snapshot_at) : null,
    expiresAt: row.expires_at ? new Date(row.expires_at) : null,
    usedAt: new Date(row.used_at),
    released: row.released,
  };
}

/** Writes the fields a patch sets (and the run's epoch, when given) onto the session's record. */
async function upsert(to: Writer, sessionId: string, patch: Partial<ModalSessionRecord>, epoch?: number) {
  const values = {
    ...(patch.sandboxId !== undefined && { sandbox_id: patch.sandboxId }),
    ...(patch.imageId !== undefined && { image_id: patch.imageId }),
    ...(patch.snapshotAt !== undefined && { snapshot_at: patch.snapshotAt }),
    ...(patch.expiresAt !== undefined && { expires_at: patch.expiresAt }),
    ...(patch.usedAt !== undefined && { used_at: patch.usedAt }),
    ...(patch.released !== undefined && { released: patch.released }),
    ...(epoch !== undefined && { run_epoch: epoch }),
  };
  await to
    .insertInto('modal_sandboxes')
    .values({ session_id: sessionId, ...values })
    .onConflict((oc) =>
      Object.keys(values).length > 0
        ? oc.column('session_id').doUpdateSet(values)
        : oc.column('session_id').doNothing(),
    )
    .execute();
}

/** The Modal provider's per-session records (`modal_sandboxes`). */
export function createModalRecordStore(db: Kysely<Database>): ModalRecordStore {
  return {
    async get(sessionId) {
      const row = await db
        .selectFrom('modal_sandboxes')
        .selectAll()
        .where('session_id', '=', sessionId)
        .executeTakeFirst();
      return row ? toRecord(row) : undefined;
    },
    async save(sessionId, patch, epoch) {
      if (epoch === undefined) return upsert(db, sessionId, patch);
      // Under the session's row lock, which a take-over (a new epoch) waits for.
      await db.transaction().execute(async (trx) => {
        const current = await currentRunEpoch(trx, sessionId, { lock: true });
        if (current !== epoch) throw epochRefusal('a sandbox record', sessionId, epoch, current);
        await upsert(trx, sessionId, patch, epoch);
      });
    },
    async assertEpoch(sessionId, epoch) {
      const current = await currentRunEpoch(db, sessionId);
      if (current !== epoch) throw epochRefusal('a call to the sandbox', sessionId, epoch, current);
    },
    async getTemplate(repo) {
      const row = await db
        .selectFrom('modal_templates')
        .select(['image_id', 'base_commit'])
        .where('repo', '=', repo)
        .executeTakeFirst();
      return row ? { imageId: row.image_id, baseCommit: row.base_commit } : undefined;
    },
    async saveTemplate(repo, template) {
      const values = { image_id: template.imageId, base_commit: template.baseCommit, created_at: new Date() };
      await db
        .insertInto('modal_templates')
        .values({ repo, ...values })
        .onConflict((oc) => oc.column('repo').doUpdateSet(values))
        .execute();
    },
    async listTemplates() {
      const rows = await db
        .selectFrom('modal_templates')
        .select(['repo', 'image_id', 'base_commit'])
        .orderBy('repo')
        .execute();
      return rows.map((row) => ({ repo: row.repo, imageId: row.image_id, baseCommit: row.base_commit }));
    },
    async replaceTemplate(repo, fromImageId, template) {
      const result = await db
        .updateTable('modal_templates')
        .set({ image_id: template.imageId, base_commit: template.baseCommit, created_at: new Date() })
        .where('repo', '=', repo)
        .where('image_id', '=', fromImageId)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
    async bySandbox() {
      const rows = await db.selectFrom('modal_sandboxes').selectAll().where('sandbox_id', 'is not', null).execute();
      return new Map(rows.map((row) => [row.sandbox_id!, { sessionId: row.session_id, ...toRecord(row) }]));
    },
  };
}

function epochRefusal(
  what: string,
  sessionId: string,
  epoch: number,
  current: string | number | undefined,
): PatchbayError {
  return new PatchbayError(
    'lease_lost',
    `${what} was refused: run epoch ${epoch} of session ${sessionId} was taken over (now ${current ?? 'unknown'})`,
  );
}
