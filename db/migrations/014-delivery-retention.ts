import { sql, type Kysely } from 'kysely';

/**
 * Finished inbound deliveries are deleted once they are older than the retention
 * (DELIVERY_RETENTION_DAYS): this index finds them without reading the table.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('inbound_deliveries_finished')
    .on('inbound_deliveries')
    .column('finished_at')
    .where(sql.ref('status'), '<>', 'pending')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('inbound_deliveries_finished').execute();
}
