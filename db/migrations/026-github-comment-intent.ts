import type { Kysely } from 'kysely';

/**
 * A request's progress comment is recorded as intended (with the time) before it is posted, so a post whose answer
 * was lost or a crash between posting and recording leaves the request marked "in doubt": whoever
 * posts it next looks for the bot's marked comment in the thread first instead of posting another
 * (progress-comment-once.ts). `reply_to`: the review comment a review-thread reply goes under, so
 * the post can be made again (or looked for) from the row alone.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('github_requests')
    .addColumn('comment_intended_at', 'timestamptz')
    .addColumn('reply_to', 'bigint')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('github_requests').dropColumn('reply_to').dropColumn('comment_intended_at').execute();
}
