import type { ArgsAfterDb } from '../../db/database.ts';
import type { IntegrationDb } from '../../db/schema.ts';
import { Actor } from '../../src/core/actor.ts';
import { ThreadRef, threadKey } from '../../src/core/thread-ref.ts';
import type { RepoMention } from '../../src/core/repo-mentions.ts';

export type SlackThread = Extract<ThreadRef, { source: 'slack' }>;

/** A request that waits for its repository. */
export type PendingTask = { thread: SlackThread; text: string; actor: Actor; candidates: RepoMention[] | null };

export type SlackStore = ReturnType<typeof createSlackStore>;

/** Slack's durable memory: tasks waiting for a repo, and what was already posted in each thread. */
export function createSlackStore(db: IntegrationDb<'slack'>) {
  return {
    async savePending(task: PendingTask): Promise<void> {
      const values = {
        thread_key: key(task.thread),
        thread: JSON.stringify(task.thread),
        text: task.text,
        actor: JSON.stringify(task.actor),
        candidates: task.candidates ? JSON.stringify(task.candidates) : null,
      };
      await db
        .insertInto('slack_pending_tasks')
        .values(values)
        .onConflict((oc) => oc.column('thread_key').doUpdateSet({ candidates: values.candidates }))
        .execute();
    },

    async pending(thread: SlackThread): Promise<PendingTask | undefined> {
      const row = await db
        .selectFrom('slack_pending_tasks')
        .selectAll()
        .where('thread_key', '=', key(thread))
        .executeTakeFirst();
      if (!row) return undefined;
      return {
        thread: ThreadRef.parse(row.thread) as SlackThread,
        text: row.text,
        actor: Actor.parse(row.actor),
        candidates: (row.candidates as RepoMention[] | null) ?? null,
      };
    },

    /** Removes the pending task; false when another process took it first. */
    async takePending(thread: SlackThread): Promise<boolean> {
      const result = await db
        .deleteFrom('slack_pending_tasks')
        .where('thread_key', '=', key(thread))
        .executeTakeFirst();
      return Number(result.numDeletedRows) > 0;
    },

    async posts(thread: SlackThread): Promise<Map<string, string>> {
      const rows = await db
        .selectFrom('slack_posts')
        .select(['post_key', 'ts'])
        .where('thread_key', '=', key(thread))
        .where('ts', '!=', intended)
        .execute();
      return new Map(rows.map((r) => [r.post_key, r.ts]));
    },

    /**
     * Notes a post about to be made, before it is made: one found still intended later was perhaps
     * made by a process that crashed before recording it, so the thread is looked at first.
     * True when it was already intended (in doubt).
     */
    async intendPost(thread: SlackThread, postKey: string): Promise<boolean> {
      const row = await db
        .insertInto('slack_posts')
        .values({ thread_key: key(thread), post_key: postKey, ts: intended })
        .onConflict((oc) => oc.columns(['thread_key', 'post_key']).doNothing())
        .returning('post_key')
        .executeTakeFirst();
      return row === undefined;
    },

    withdrawPost: (...args: ArgsAfterDb<typeof withdrawPost>) => withdrawPost(db, ...args),

    async recordPost(thread: SlackThread, postKey: string, ts: string): Promise<void> {
      await db
        .insertInto('slack_posts')
        .values({ thread_key: key(thread), post_key: postKey, ts })
        .onConflict((oc) =>
          oc.columns(['thread_key', 'post_key']).doUpdateSet({ ts }).where('slack_posts.ts', '=', intended),
        )
        .execute();
    },
  };
}

/** Slack clearly did not make the intended post: nothing of it is in doubt, so a later try needs no look. */
async function withdrawPost(db: IntegrationDb<'slack'>, thread: SlackThread, postKey: string): Promise<void> {
  await db
    .deleteFrom('slack_posts')
    .where('thread_key', '=', key(thread))
    .where('post_key', '=', postKey)
    .where('ts', '=', intended)
    .execute();
}

/** The ts of a post intended and not yet known to be made (Slack's ts is never empty). */
const intended = '';

function key(thread: SlackThread): string {
  return threadKey(thread)!;
}
