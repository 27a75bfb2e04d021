import { type Selectable, sql } from 'kysely';
import type { Db } from '../../../db/database.ts';
import type { CodexSignInsTable } from '../../../db/schema-engines.ts';
import type { ChatGPTSignInStore, SealedSignIn, SignInSave } from '../../engines/chatgpt-signin.ts';

const ID = 'default';

/** The installation's ChatGPT sign-in for Codex, one row of `codex_signins` (migration 023). */
export function createCodexSignInStore(db: Db): ChatGPTSignInStore {
  const columns = (save: SignInSave) => ({
    account_id: save.accountId,
    email: save.email,
    access_token_ciphertext: save.accessCiphertext,
    refresh_token_ciphertext: save.refreshCiphertext,
    id_token_ciphertext: save.idCiphertext,
    expires_at: save.expiresAt,
    refused_reason: save.refusedReason,
    updated_at: sql<Date>`now()`,
  });
  return {
    async read() {
      const row = await db.selectFrom('codex_signins').selectAll().where('id', '=', ID).executeTakeFirst();
      return row && toSignIn(row);
    },
    withLocked(work) {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('codex_signins')
          .selectAll()
          .where('id', '=', ID)
          .forUpdate()
          .executeTakeFirst();
        const { save, result } = await work(row && toSignIn(row));
        if (save) await trx.updateTable('codex_signins').set(columns(save)).where('id', '=', ID).execute();
        return result;
      });
    },
    async put(save) {
      await db
        .insertInto('codex_signins')
        .values({ id: ID, ...columns(save) })
        .onConflict((oc) => oc.column('id').doUpdateSet(columns(save)))
        .execute();
    },
    async remove() {
      const result = await db.deleteFrom('codex_signins').where('id', '=', ID).executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },
  };
}

function toSignIn(row: Selectable<CodexSignInsTable>): SealedSignIn {
  return {
    accountId: row.account_id,
    email: row.email,
    accessCiphertext: row.access_token_ciphertext,
    refreshCiphertext: row.refresh_token_ciphertext,
    idCiphertext: row.id_token_ciphertext,
    expiresAt: row.expires_at,
    refusedReason: row.refused_reason,
    updatedAt: row.updated_at,
  };
}
