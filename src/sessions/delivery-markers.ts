import type { Db } from '../../db/database.ts';
import type { Trx } from './session-lock.ts';

/** A webhook or event delivery, identified by its source's delivery id. */
export type Delivery = { source: string; id: string };

/** The delivery was recorded before: the write it came with was not made again. */
export class DuplicateDelivery extends Error {
  readonly delivery: Delivery;
  constructor(delivery: Delivery) {
    super(`delivery ${delivery.source}/${delivery.id} was handled before`);
    this.name = 'DuplicateDelivery';
    this.delivery = delivery;
  }
}

/** Records a delivery id in the caller's transaction, or throws DuplicateDelivery when it was seen. */
export async function claimDelivery(trx: Trx, delivery: Delivery): Promise<void> {
  if (!(await recordDelivery(trx, delivery.source, delivery.id))) throw new DuplicateDelivery(delivery);
}

/** Records a webhook or event delivery id; false when it was seen before. */
export async function recordDelivery(db: Db | Trx, source: string, deliveryId: string): Promise<boolean> {
  const row = await db
    .insertInto('deliveries')
    .values({ source, delivery_id: deliveryId })
    .onConflict((oc) => oc.columns(['source', 'delivery_id']).doNothing())
    .returning('delivery_id')
    .executeTakeFirst();
  return row !== undefined;
}
