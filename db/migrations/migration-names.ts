import { sql, type Kysely } from 'kysely';

/**
 * Migrations renamed after they shipped, old name to new. Parallel work had handed out 009 and 010
 * twice (009-linear-inbound and 009-ordered-deliveries, 010-modal-sandboxes and 010-modal-templates);
 * issue 33 gave every migration from the second 009 on the next number, keeping their order.
 * Databases migrated before still list the old names in `kysely_migration`, and Kysely refuses a
 * recorded migration it cannot find, so `renameRecordedMigrations` rewrites them first.
 */
export const renamedMigrations: ReadonlyMap<string, string> = new Map([
  ['009-ordered-deliveries', '010-ordered-deliveries'],
  ['010-modal-sandboxes', '011-modal-sandboxes'],
  ['010-modal-templates', '012-modal-templates'],
  ['011-scale-out', '013-scale-out'],
  ['012-delivery-retention', '014-delivery-retention'],
  ['013-checkpoint-increments', '015-checkpoint-increments'],
  ['014-linear-refresh-tokens', '016-linear-refresh-tokens'],
  ['015-page-sessions', '017-page-sessions'],
  ['016-run-leases', '018-run-leases'],
  ['017-pull-outcomes', '019-pull-outcomes'],
  ['018-session-artifacts', '020-session-artifacts'],
  ['019-attachment-sources', '021-attachment-sources'],
  ['020-glossary-names', '022-glossary-names'],
  ['021-subtasks', '023-subtasks'],
  ['022-github-repo-features', '024-github-repo-features'],
]);

/**
 * Rewrites the old migration names recorded in `kysely_migration` to their new names, in one
 * statement, before the migrator reads them. Safe to repeat and to run from two processes at once (a
 * renamed row no longer matches); a database that never ran a migration has no table to rewrite.
 */
export async function renameRecordedMigrations<DB>(db: Kysely<DB>): Promise<void> {
  const found = await sql<{ name: string | null }>`select to_regclass('kysely_migration')::text as name`.execute(db);
  if (found.rows[0]?.name == null) return;
  const cases = sql.join(
    [...renamedMigrations].map(([from, to]) => sql`when ${from} then ${to}`),
    sql` `,
  );
  await sql`update kysely_migration set name = case name ${cases} end
    where name in (${sql.join([...renamedMigrations.keys()])})`.execute(db);
}
