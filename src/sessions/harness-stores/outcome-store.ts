import { sql, type Kysely } from 'kysely';
import type { Database } from '../../../db/schema.ts';
import { revertWindowMs, type OutcomeLedger, type PullKey, type PullOpened } from '../../core/pull-outcome.ts';

const lower = (where: { owner: string; repo: string }) => ({
  owner: where.owner.toLowerCase(),
  repo: where.repo.toLowerCase(),
});

/** `owner/repo/pull/N` from a pull request's web address (any host, GitHub Enterprise included). */
export function pullKeyOfUrl(url: string): PullKey | undefined {
  const m = /\/([^/]+)\/([^/]+)\/pull\/(\d+)\/?$/.exec(new URL(url, 'http://x').pathname);
  return m ? { owner: m[1]!.toLowerCase(), repo: m[2]!.toLowerCase(), number: Number(m[3]) } : undefined;
}

/**
 * The outcome ledger on PostgreSQL (`pull_outcomes`, migration 019). Sets, not counters: human
 * commits and reviews are kept by SHA and id, so a webhook worked twice counts once.
 */
export function createOutcomeStore(db: Kysely<Database>): OutcomeLedger {
  const row = (pull: PullKey) =>
    db
      .updateTable('pull_outcomes')
      .where('owner', '=', pull.owner.toLowerCase())
      .where('repo', '=', pull.repo.toLowerCase())
      .where('number', '=', pull.number);
  return {
    opened: (pull) => recordOpened(db, pull),
    async finished(pull) {
      await row(pull)
        .set({
          state: pull.state,
          finished_at: pull.at,
          finished_by: pull.by ?? null,
          merge_commit: pull.mergeCommit ?? null,
          updated_at: sql`now()`,
        })
        .execute();
      if (pull.state === 'merged' && pull.mergeCommit) await applyEarlierSignals(db, pull, pull.mergeCommit);
    },
    humanCommits: (where, shas) => addHumanCommits(db, where, shas),
    async reviewed(pull, reviewId) {
      await row(pull)
        .set({
          review_ids: sql`case when review_ids @> ${JSON.stringify([reviewId])}::jsonb then review_ids else review_ids || ${JSON.stringify([reviewId])}::jsonb end`,
          updated_at: sql`now()`,
        })
        .execute();
    },
    async reverted(where, reverted, revertCommit, at) {
      await keepSignal(db, where, reverted.toLowerCase(), { revert_commit: revertCommit, reverted_at: at });
      return markReverted(db, where, reverted, revertCommit, at);
    },
    async mergeCi(where, commit, conclusion, at) {
      await keepSignal(db, where, commit, { ci: conclusion, ci_at: at });
      await markMergeCi(db, where, commit, conclusion, at);
    },
    async backfillCandidates() {
      await trackEarlierPulls(db);
      return db
        .selectFrom('pull_outcomes')
        .select(['owner', 'repo', 'number'])
        .where('state', '=', 'open')
        .orderBy('opened_at')
        .execute();
    },
  };
}

/** Tracks a pull request Patchbay opened, or notes Patchbay's new commit on one it already tracks. */
async function recordOpened(db: Kysely<Database>, pull: PullOpened): Promise<void> {
  const values = {
    ...lower(pull),
    number: pull.number,
    session_id: pull.sessionId,
    url: pull.url,
    branch: pull.branch,
    base_branch: pull.baseBranch,
    patchbay_commit: pull.commit,
    opened_at: pull.at,
  };
  await db
    .insertInto('pull_outcomes')
    .values(values)
    .onConflict((c) =>
      c.columns(['owner', 'repo', 'number']).doUpdateSet((eb) => ({
        // A new commit of Patchbay's: what people pushed before it is no longer after its last one.
        human_commits: sql`case when ${eb.ref('pull_outcomes.patchbay_commit')} = ${pull.commit} then pull_outcomes.human_commits else '[]'::jsonb end`,
        patchbay_commit: pull.commit,
        updated_at: sql`now()`,
      })),
    )
    .execute();
}

/** Adds commits people pushed to an open tracked pull request's branch (Patchbay's own commit excluded). */
async function addHumanCommits(
  db: Kysely<Database>,
  where: { owner: string; repo: string; branch: string },
  shas: readonly string[],
): Promise<void> {
  if (shas.length === 0) return;
  const { owner, repo } = lower(where);
  await db
    .updateTable('pull_outcomes')
    .set({
      human_commits: sql`(select coalesce(jsonb_agg(distinct s), '[]'::jsonb) from jsonb_array_elements_text(human_commits || ${JSON.stringify(shas)}::jsonb) s where s <> patchbay_commit)`,
      updated_at: sql`now()`,
    })
    .where('owner', '=', owner)
    .where('repo', '=', repo)
    .where('branch', '=', where.branch)
    .where('state', '=', 'open')
    .execute();
}

/** Rows for the pull requests sessions opened before outcome tracking (their first `pr-opened` event). */
async function trackEarlierPulls(db: Kysely<Database>): Promise<void> {
  const events = await db
    .selectFrom('session_events as e')
    .innerJoin('sessions as s', 's.id', 'e.session_id')
    .select(['e.session_id', 'e.data', 'e.at', 's.base_branch'])
    .where('e.type', '=', 'pr-opened')
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('pull_outcomes as o').select('o.number').whereRef('o.session_id', '=', 'e.session_id'))),
    )
    .orderBy('e.at')
    .orderBy('e.seq')
    .execute();
  for (const e of events) {
    const data = e.data as { url: string; number: number; branch: string; commit: string };
    const key = pullKeyOfUrl(data.url);
    if (!key) continue;
    await db
      .insertInto('pull_outcomes')
      .values({
        ...key,
        session_id: e.session_id,
        url: data.url,
        branch: data.branch,
        base_branch: e.base_branch ?? 'main',
        patchbay_commit: data.commit,
        opened_at: e.at,
      })
      // A later pr-opened of the same PR (a follow-up run) carries Patchbay's latest commit.
      .onConflict((c) =>
        c
          .columns(['owner', 'repo', 'number'])
          .doUpdateSet((eb) => ({ patchbay_commit: eb.ref('excluded.patchbay_commit') })),
      )
      .execute();
  }
}

/**
 * Kept for a merge recorded later, only in repositories with a Patchbay PR open or merged within
 * the revert window, and for that window; a CI failure is not undone by a later success.
 */
async function keepSignal(
  db: Kysely<Database>,
  where: { owner: string; repo: string },
  commit: string,
  values: { ci: string; ci_at: Date } | { revert_commit: string; reverted_at: Date },
): Promise<void> {
  const { owner, repo } = lower(where);
  const since = new Date(Date.now() - revertWindowMs);
  await db
    .deleteFrom('commit_signals')
    .where('owner', '=', owner)
    .where('repo', '=', repo)
    .where(sql<boolean>`coalesce(ci_at, reverted_at) < ${since}`)
    .execute();
  const tracked = await db
    .selectFrom('pull_outcomes')
    .select('number')
    .where('owner', '=', owner)
    .where('repo', '=', repo)
    .where((eb) => eb.or([eb('state', '=', 'open'), eb('finished_at', '>=', since)]))
    .limit(1)
    .executeTakeFirst();
  if (!tracked) return;
  await db
    .insertInto('commit_signals')
    .values({ owner, repo, commit, ...values })
    .onConflict((c) =>
      c.columns(['owner', 'repo', 'commit']).doUpdateSet(
        'ci' in values
          ? {
              ci: sql`case when commit_signals.ci = 'failure' then commit_signals.ci else ${values.ci} end`,
              ci_at: values.ci_at,
            }
          : {
              revert_commit: sql`coalesce(commit_signals.revert_commit, ${values.revert_commit})`,
              reverted_at: sql`coalesce(commit_signals.reverted_at, ${values.reverted_at})`,
            },
      ),
    )
    .execute();
}
/** CI and a revert of the merge commit that were worked before the merge itself. */
async function applyEarlierSignals(db: Kysely<Database>, pull: PullKey, mergeCommit: string): Promise<void> {
  const { owner, repo } = lower(pull);
  const signals = await db
    .selectFrom('commit_signals')
    .selectAll()
    .where('owner', '=', owner)
    .where('repo', '=', repo)
    .where(sql<boolean>`${mergeCommit.toLowerCase()} like commit || '%'`)
    .execute();
  for (const signal of signals) {
    if (signal.ci && signal.ci_at) await markMergeCi(db, pull, mergeCommit, signal.ci, signal.ci_at);
    if (signal.revert_commit && signal.reverted_at)
      await markReverted(db, pull, signal.commit, signal.revert_commit, signal.reverted_at);
  }
}

/** Marks the merged PR whose merge commit `reverted` names, within the revert window. */
async function markReverted(
  db: Kysely<Database>,
  where: { owner: string; repo: string },
  reverted: string,
  revertCommit: string,
  at: Date,
) {
  const { owner, repo } = lower(where);
  const since = new Date(at.getTime() - revertWindowMs);
  return db
    .updateTable('pull_outcomes')
    .set({ reverted_at: at, revert_commit: revertCommit, updated_at: sql`now()` })
    .where('owner', '=', owner)
    .where('repo', '=', repo)
    .where('state', '=', 'merged')
    .where('merge_commit', 'like', `${reverted.toLowerCase()}%`)
    .where('finished_at', '>=', since)
    .where('reverted_at', 'is', null)
    .returning(['owner', 'repo', 'number'])
    .execute();
}

/** Records CI on a merge commit; a failure is not undone by a later success of another check on it. */
async function markMergeCi(
  db: Kysely<Database>,
  where: { owner: string; repo: string },
  commit: string,
  conclusion: string,
  at: Date,
) {
  const { owner, repo } = lower(where);
  await db
    .updateTable('pull_outcomes')
    .set({
      merge_ci: sql`case when merge_ci = 'failure' then merge_ci else ${conclusion} end`,
      merge_ci_at: at,
      updated_at: sql`now()`,
    })
    .where('owner', '=', owner)
    .where('repo', '=', repo)
    .where('merge_commit', '=', commit)
    .execute();
}
