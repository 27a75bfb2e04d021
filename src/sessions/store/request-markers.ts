import type { Db } from '../../../db/database.ts';
import type { Trx } from './session-lock.ts';

/** A webhook or event marker, identified by its source's marker id. */
export type RequestMarker = { source: string; id: string };

/** The marker was recorded before: the write it came with was not made again. */
export class DuplicateRequest extends Error {
  readonly marker: RequestMarker;
  constructor(marker: RequestMarker) {
    super(`marker ${marker.source}/${marker.id} was handled before`);
    this.name = 'DuplicateRequest';
    this.marker = marker;
  }
}

/** Records a request marker in the caller's transaction, or throws DuplicateRequest when it was seen. */
export async function claimMarker(trx: Trx, marker: RequestMarker): Promise<void> {
  if (!(await recordMarker(trx, marker.source, marker.id))) throw new DuplicateRequest(marker);
}

/** Records the dedupe key of a request (a webhook or event it carried); false when it was seen before. */
export async function recordMarker(db: Db | Trx, source: string, key: string): Promise<boolean> {
  const row = await db
    .insertInto('request_markers')
    .values({ source, dedupe_key: key })
    .onConflict((oc) => oc.columns(['source', 'dedupe_key']).doNothing())
    .returning('dedupe_key')
    .executeTakeFirst();
  return row !== undefined;
}
