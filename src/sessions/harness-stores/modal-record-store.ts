import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database, ModalSandboxesTable } from '../../../db/schema.ts';
import type { ModalRecordStore, ModalSessionRecord } from '../../../sandbox/modal/modal-records.ts';
import { checksSandboxId, sandboxSession } from '../../core/checks-sandbox.ts';
import { PatchbayError } from '../../core/errors.ts';
import { currentRunEpoch } from '../store/session-queries.ts';

type Writer = Kysely<Database> | Transaction<Database>;

/** A sandbox's row: the session that owns it and whose it is (the agent's, or the checks' own). */
type RowKey = { session: string; role: 'agent' | 'checks' };

function rowKey(sandboxKey: string): RowKey {
  const session = sandboxSession(sandboxKey);
  return { session, role: session === sandboxKey ? 'agent' : 'checks' };
}

/** The id the provider knows the sandbox by (its session's, or `<session>-checks`). */
function sandboxKeyOf(row: Pick<Selectable<ModalSandboxesTable>, 'session_id' | 'role'>): string {
  return row.role === 'checks' ? checksSandboxId(row.session_id) : row.session_id;
}

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

/** Writes the fields a patch sets (and the run's epoch, when given) onto the sandbox's record. */
async function upsert(to: Writer, key: RowKey, patch: Partial<ModalSessionRecord>, epoch?: number) {
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
    .values({ session_id: key.session, role: key.role, ...values })
    .onConflict((oc) =>
      Object.keys(values).length > 0
        ? oc.columns(['session_id', 'role']).doUpdateSet(values)
        : oc.columns(['session_id', 'role']).doNothing(),
    )
    .execute();
}

/**
 * The Modal provider's per-sandbox records (`modal_sandboxes`), keyed by the id the provider
 * acquires a sandbox under: a session's own, or its checks' (`<session>-checks`), stored as the
 * owning session and a role. The run epoch checked is always the owning session's.
 */
export function createModalRecordStore(db: Kysely<Database>): ModalRecordStore {
  return {
    async get(sandboxKey) {
      const key = rowKey(sandboxKey);
      const row = await db
        .selectFrom('modal_sandboxes')
        .selectAll()
        .where('session_id', '=', key.session)
        .where('role', '=', key.role)
        .executeTakeFirst();
      return row ? toRecord(row) : undefined;
    },
    async save(sandboxKey, patch, epoch) {
      const key = rowKey(sandboxKey);
      if (epoch === undefined) return upsert(db, key, patch);
      // Under the session's row lock, which a take-over (a new epoch) waits for.
      await db.transaction().execute(async (trx) => {
        const current = await currentRunEpoch(trx, key.session, { lock: true });
        if (current !== epoch) throw epochRefusal('a sandbox record', key.session, epoch, current);
        await upsert(trx, key, patch, epoch);
      });
    },
    async assertEpoch(sandboxKey, epoch) {
      const { session } = rowKey(sandboxKey);
      const current = await currentRunEpoch(db, session);
      if (current !== epoch) throw epochRefusal('a call to the sandbox', session, epoch, current);
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
      return new Map(rows.map((row) => [row.sandbox_id!, { sessionId: sandboxKeyOf(row), ...toRecord(row) }]));
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
