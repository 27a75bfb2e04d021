import { sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { PatchbayError } from '../../core/errors.ts';
import type { SessionPatch } from '../../core/run-log.ts';
import type { SessionRecord } from '../../core/session-record.ts';
import type { Usage } from '../../core/transcript.ts';
import { leaseLost, type RunLease } from '../worker/run-leases.ts';
import { toSessionRecord } from './session-row.ts';

/** A transaction of the session store's writes; each write holds its session's row lock. */
export type Trx = Transaction<Database>;

/**
 * Takes the session's row lock. With `fence` (a run's lease), refuses when another run took the
 * session over: the lease's epoch is no longer the session's. A take-over moves the epoch under
 * this same row lock, so a write that passed the check lands before the take-over, never after.
 */
export async function lockSession(
  trx: Trx,
  sessionId: string,
  fence?: RunLease,
  what = 'a write',
): Promise<SessionRecord> {
  const row = await trx.selectFrom('sessions').selectAll().where('id', '=', sessionId).forUpdate().executeTakeFirst();
  if (!row) throw new PatchbayError('not_found', `session ${sessionId} does not exist`);
  if (fence && Number(row.run_epoch) !== fence.epoch) throw leaseLost(fence, Number(row.run_epoch), what);
  return toSessionRecord(row);
}

/** The `sessions` columns a patch sets; fields it leaves undefined are not touched. */
export function patchColumns(patch: SessionPatch) {
  const json = (value: unknown) => (value == null ? null : JSON.stringify(value));
  return {
    ...(patch.branch !== undefined && { branch: patch.branch }),
    ...(patch.baseBranch !== undefined && { base_branch: patch.baseBranch }),
    ...(patch.pendingQuestion !== undefined && { pending_question: json(patch.pendingQuestion) }),
    ...(patch.result !== undefined && { result: json(patch.result) }),
    ...(patch.error !== undefined && { error: patch.error }),
  };
}

/** The `sessions` token counters, each raised by the usage of a model call. */
export function usageIncrements(usage: Usage) {
  return {
    input_tokens: sql<number>`input_tokens + ${usage.inputTokens}`,
    output_tokens: sql<number>`output_tokens + ${usage.outputTokens}`,
    cache_read_tokens: sql<number>`cache_read_tokens + ${usage.cacheReadTokens}`,
    cache_write_tokens: sql<number>`cache_write_tokens + ${usage.cacheWriteTokens}`,
  };
}
