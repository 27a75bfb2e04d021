import { sql } from 'kysely';
import type { IntegrationDb } from '../../db/schema.ts';

// The GitHub store's SQL of CI failures and of the per-pull-request autofix setting,
// called by createGitHubStore.

/**
 * Claims the CI failure on a pull request's head commit for one delivery. True when this
 * delivery holds it (first, or its own retry); false when another delivery took it.
 */
export async function claimCiFailure(
  db: IntegrationDb<'github'>,
  input: {
    owner: string;
    repo: string;
    number: number;
    headSha: string;
    sessionId: string;
    claimedBy: string;
  },
): Promise<boolean> {
  const where = {
    owner: input.owner.toLowerCase(),
    repo: input.repo.toLowerCase(),
    number: input.number,
    head_sha: input.headSha,
  };
  await db
    .insertInto('github_ci_failures')
    .values({ ...where, session_id: input.sessionId, claimed_by: input.claimedBy })
    .onConflict((oc) => oc.columns(['owner', 'repo', 'number', 'head_sha']).doNothing())
    .execute();
  const row = await db
    .selectFrom('github_ci_failures')
    .select('claimed_by')
    .where('owner', '=', where.owner)
    .where('repo', '=', where.repo)
    .where('number', '=', where.number)
    .where('head_sha', '=', where.head_sha)
    .executeTakeFirst();
  return row?.claimed_by === input.claimedBy;
}

export async function decideCiFailure(
  db: IntegrationDb<'github'>,
  input: {
    owner: string;
    repo: string;
    number: number;
    headSha: string;
    followUp: boolean;
    names: string[];
    signature: string;
    reason?: string;
  },
) {
  await db
    .updateTable('github_ci_failures')
    .set({
      follow_up: input.followUp,
      names: JSON.stringify(input.names),
      signature: input.signature,
      reason: input.reason ?? null,
    })
    .where('owner', '=', input.owner.toLowerCase())
    .where('repo', '=', input.repo.toLowerCase())
    .where('number', '=', input.number)
    .where('head_sha', '=', input.headSha)
    .execute();
}

/** Earlier decided CI failures of a pull request (other head commits), oldest first. */
export async function ciFailures(
  db: IntegrationDb<'github'>,
  owner: string,
  repo: string,
  number: number,
  exceptSha: string,
): Promise<{ headSha: string; followUp: boolean; signature: string | null; names: string[] }[]> {
  const rows = await db
    .selectFrom('github_ci_failures')
    .select(['head_sha', 'follow_up', 'signature', 'names'])
    .where('owner', '=', owner.toLowerCase())
    .where('repo', '=', repo.toLowerCase())
    .where('number', '=', number)
    .where('head_sha', '!=', exceptSha)
    .where('follow_up', 'is not', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    headSha: r.head_sha,
    followUp: r.follow_up === true,
    signature: r.signature,
    names: Array.isArray(r.names) ? (r.names as string[]) : [],
  }));
}

/** The failing jobs recorded for a pull request's commit, if CI failed on it before. */
export async function ciFailureAt(
  db: IntegrationDb<'github'>,
  owner: string,
  repo: string,
  number: number,
  headSha: string,
): Promise<{ names: string[] } | undefined> {
  const row = await db
    .selectFrom('github_ci_failures')
    .select('names')
    .where('owner', '=', owner.toLowerCase())
    .where('repo', '=', repo.toLowerCase())
    .where('number', '=', number)
    .where('head_sha', '=', headSha)
    .where('follow_up', 'is not', null)
    .executeTakeFirst();
  return row && { names: Array.isArray(row.names) ? (row.names as string[]) : [] };
}

/** Whether CI failures start follow-ups on this pull request (on unless someone said `autofix off`). */
export async function autofix(
  db: IntegrationDb<'github'>,
  owner: string,
  repo: string,
  number: number,
): Promise<boolean> {
  const row = await db
    .selectFrom('github_pull_autofix')
    .select('enabled')
    .where('owner', '=', owner.toLowerCase())
    .where('repo', '=', repo.toLowerCase())
    .where('number', '=', number)
    .executeTakeFirst();
  return row?.enabled ?? true;
}

export async function setAutofix(
  db: IntegrationDb<'github'>,
  owner: string,
  repo: string,
  number: number,
  enabled: boolean,
  by: string,
) {
  await db
    .insertInto('github_pull_autofix')
    .values({ owner: owner.toLowerCase(), repo: repo.toLowerCase(), number, enabled, set_by: by })
    .onConflict((oc) =>
      oc.columns(['owner', 'repo', 'number']).doUpdateSet({ enabled, set_by: by, updated_at: sql`now()` }),
    )
    .execute();
}
