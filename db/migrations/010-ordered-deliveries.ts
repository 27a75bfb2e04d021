import { sql, type Kysely } from 'kysely';

/**
 * Deliveries that share an order key (one GitHub installation, one thread, one Linear agent
 * session) are worked one at a time in the order they were stored: the pipeline parks a delivery
 * while an earlier one of its key is pending. Rows stored before have no key and stay unordered.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('inbound_deliveries').addColumn('order_key', 'text').execute();
  await db.schema
    .createIndex('inbound_deliveries_pending_order')
    .on('inbound_deliveries')
    .columns(['order_key', 'id'])
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('inbound_deliveries_pending_order').execute();
  await db.schema.alterTable('inbound_deliveries').dropColumn('order_key').execute();
}
