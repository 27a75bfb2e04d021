import { sql } from 'kysely';
import type { ArgsAfterDb } from '../../db/database.ts';
import type { IntegrationDb } from '../../db/schema.ts';
import type { RepoRef } from '../../src/core/repo-ref.ts';
import { autofix, ciFailureAt, ciFailures, claimCiFailure, decideCiFailure, setAutofix } from './github-ci-store.ts';

export type GitHubRequest = {
  id: number;
  sessionId: string | null;
  threadKey: string;
  owner: string;
  repo: string;
  number: number;
  commentKind: 'issue' | 'review';
  commentId: number | null;
  /** The review comment a review-thread reply goes under; null for an issue comment. */
  replyTo: number | null;
  /** When a post of the progress comment was begun (by any process); null before. */
  commentIntendedAt: Date | null;
  /** When the request was taken: its interpreter posts the progress comment soon after. */
  createdAt: Date;
  startSeq: number;
  lastBody: string | null;
  finished: boolean;
};

export type GitHubStore = ReturnType<typeof createGitHubStore>;

/**
 * The GitHub integration's own tables (migration 004): installations and their repositories,
 * requests and their progress comments, people's stored tokens, CI failures and autofix settings.
 */
export function createGitHubStore(db: IntegrationDb<'github'>) {
  return {
    upsertInstallation: (...args: ArgsAfterDb<typeof upsertInstallation>) => upsertInstallation(db, ...args),
    deleteInstallation: (...args: ArgsAfterDb<typeof deleteInstallation>) => deleteInstallation(db, ...args),
    addRepos: (...args: ArgsAfterDb<typeof addRepos>) => addRepos(db, ...args),
    removeRepos: (...args: ArgsAfterDb<typeof removeRepos>) => removeRepos(db, ...args),
    reposOf: (...args: ArgsAfterDb<typeof reposOf>) => reposOf(db, ...args),
    installedRepos: (...args: ArgsAfterDb<typeof installedRepos>) => installedRepos(db, ...args),
    installation: (...args: ArgsAfterDb<typeof installation>) => installation(db, ...args),
    installationFor: (...args: ArgsAfterDb<typeof installationFor>) => installationFor(db, ...args),
    createRequest: (...args: ArgsAfterDb<typeof createRequest>) => createRequest(db, ...args),
    openRequests: (...args: ArgsAfterDb<typeof openRequests>) => openRequests(db, ...args),
    intendComment: (...args: ArgsAfterDb<typeof intendComment>) => intendComment(db, ...args),
    updateRequest: (...args: ArgsAfterDb<typeof updateRequest>) => updateRequest(db, ...args),
    saveUserToken: (...args: ArgsAfterDb<typeof saveUserToken>) => saveUserToken(db, ...args),
    userToken: (...args: ArgsAfterDb<typeof userToken>) => userToken(db, ...args),
    claimCiFailure: (...args: ArgsAfterDb<typeof claimCiFailure>) => claimCiFailure(db, ...args),
    decideCiFailure: (...args: ArgsAfterDb<typeof decideCiFailure>) => decideCiFailure(db, ...args),
    ciFailures: (...args: ArgsAfterDb<typeof ciFailures>) => ciFailures(db, ...args),
    ciFailureAt: (...args: ArgsAfterDb<typeof ciFailureAt>) => ciFailureAt(db, ...args),
    draftsAllowed: (...args: ArgsAfterDb<typeof draftsAllowed>) => draftsAllowed(db, ...args),
    rememberDrafts: (...args: ArgsAfterDb<typeof rememberDrafts>) => rememberDrafts(db, ...args),
    deliveriesSince: (...args: ArgsAfterDb<typeof deliveriesSince>) => deliveriesSince(db, ...args),
    saveDeliveriesSince: (...args: ArgsAfterDb<typeof saveDeliveriesSince>) => saveDeliveriesSince(db, ...args),
    autofix: (...args: ArgsAfterDb<typeof autofix>) => autofix(db, ...args),
    setAutofix: (...args: ArgsAfterDb<typeof setAutofix>) => setAutofix(db, ...args),
  };
}

async function upsertInstallation(
  db: IntegrationDb<'github'>,
  input: {
    id: number;
    accountLogin: string;
    accountType: string;
    repositorySelection: string;
    suspended: boolean;
  },
) {
  await db
    .insertInto('github_installations')
    .values({
      id: input.id,
      account_login: input.accountLogin,
      account_type: input.accountType,
      repository_selection: input.repositorySelection,
      suspended: input.suspended,
    })
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        account_login: input.accountLogin,
        account_type: input.accountType,
        repository_selection: input.repositorySelection,
        suspended: input.suspended,
        updated_at: sql`now()`,
      }),
    )
    .execute();
}

async function deleteInstallation(db: IntegrationDb<'github'>, id: number) {
  await db.deleteFrom('github_installations').where('id', '=', id).execute();
}

async function addRepos(
  db: IntegrationDb<'github'>,
  installationId: number,
  repos: { id: number; fullName: string }[],
) {
  if (repos.length === 0) return;
  await db
    .insertInto('github_installation_repos')
    .values(repos.map((r) => ({ installation_id: installationId, repo_id: r.id, full_name: r.fullName.toLowerCase() })))
    .onConflict((oc) => oc.columns(['installation_id', 'repo_id']).doUpdateSet({ full_name: sql`excluded.full_name` }))
    .execute();
}

async function removeRepos(db: IntegrationDb<'github'>, installationId: number, repoIds: number[]) {
  if (repoIds.length === 0) return;
  await db
    .deleteFrom('github_installation_repos')
    .where('installation_id', '=', installationId)
    .where('repo_id', 'in', repoIds)
    .execute();
}

async function reposOf(db: IntegrationDb<'github'>, installationId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('github_installation_repos')
    .select('full_name')
    .where('installation_id', '=', installationId)
    .orderBy('full_name')
    .execute();
  return rows.map((r) => r.full_name);
}

/** owner/name (lower-case) of every repository of an active installation. */
async function installedRepos(db: IntegrationDb<'github'>): Promise<string[]> {
  const rows = await db
    .selectFrom('github_installation_repos')
    .innerJoin('github_installations', 'github_installations.id', 'github_installation_repos.installation_id')
    .select('github_installation_repos.full_name')
    .distinct()
    .where('github_installations.suspended', '=', false)
    .orderBy('github_installation_repos.full_name')
    .execute();
  return rows.map((r) => r.full_name);
}

async function installation(db: IntegrationDb<'github'>, id: number) {
  return db.selectFrom('github_installations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The active installation that covers a repository, when the webhooks told us about it. */
async function installationFor(db: IntegrationDb<'github'>, repo: RepoRef): Promise<number | undefined> {
  const row = await db
    .selectFrom('github_installation_repos')
    .innerJoin('github_installations', 'github_installations.id', 'github_installation_repos.installation_id')
    .select('github_installations.id')
    .where('github_installation_repos.full_name', '=', `${repo.owner}/${repo.repo}`.toLowerCase())
    .where('github_installations.suspended', '=', false)
    .executeTakeFirst();
  return row?.id;
}

/** Made before the session service sees the request, so the replier never runs ahead of it. */
async function createRequest(
  db: IntegrationDb<'github'>,
  input: Omit<GitHubRequest, 'id' | 'lastBody' | 'finished' | 'sessionId' | 'commentIntendedAt' | 'createdAt'> & {
    lastBody: string;
  },
): Promise<number> {
  const row = await db
    .insertInto('github_requests')
    .values({
      thread_key: input.threadKey,
      owner: input.owner,
      repo: input.repo,
      number: input.number,
      comment_kind: input.commentKind,
      comment_id: input.commentId,
      reply_to: input.replyTo,
      start_seq: input.startSeq,
      last_body: input.lastBody,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function openRequests(db: IntegrationDb<'github'>, threadKey: string): Promise<GitHubRequest[]> {
  const rows = await db
    .selectFrom('github_requests')
    .selectAll()
    .where('thread_key', '=', threadKey)
    .where('finished', '=', false)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    sessionId: r.session_id,
    threadKey: r.thread_key,
    owner: r.owner,
    repo: r.repo,
    number: r.number,
    commentKind: r.comment_kind === 'review' ? 'review' : 'issue',
    commentId: r.comment_id,
    replyTo: r.reply_to,
    commentIntendedAt: r.comment_intended_at === null ? null : new Date(r.comment_intended_at),
    createdAt: new Date(r.created_at),
    startSeq: r.start_seq,
    lastBody: r.last_body,
    finished: r.finished,
  }));
}

/** Records that the progress comment is about to be posted; true when a post begun before (by any process) was not recorded. */
async function intendComment(db: IntegrationDb<'github'>, id: number): Promise<boolean> {
  const row = await db
    .updateTable('github_requests')
    .set({ comment_intended_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('comment_intended_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row === undefined;
}

async function updateRequest(
  db: IntegrationDb<'github'>,
  id: number,
  patch: { lastBody?: string; finished?: boolean; sessionId?: string; commentId?: number },
) {
  await db
    .updateTable('github_requests')
    .set({
      ...(patch.lastBody !== undefined && { last_body: patch.lastBody }),
      ...(patch.finished !== undefined && { finished: patch.finished }),
      ...(patch.sessionId !== undefined && { session_id: patch.sessionId }),
      ...(patch.commentId !== undefined && { comment_id: patch.commentId }),
    })
    .where('id', '=', id)
    .execute();
}

async function saveUserToken(
  db: IntegrationDb<'github'>,
  input: { actorKey: string; login: string; githubId: number; ciphertext: string },
) {
  await db
    .insertInto('github_user_tokens')
    .values({
      actor_key: input.actorKey,
      github_login: input.login,
      github_id: input.githubId,
      token_ciphertext: input.ciphertext,
    })
    .onConflict((oc) =>
      oc.column('actor_key').doUpdateSet({
        github_login: input.login,
        github_id: input.githubId,
        token_ciphertext: input.ciphertext,
        updated_at: sql`now()`,
      }),
    )
    .execute();
}

async function userToken(
  db: IntegrationDb<'github'>,
  actorKey: string,
): Promise<{ login: string; githubId: number; ciphertext: string } | undefined> {
  const row = await db
    .selectFrom('github_user_tokens')
    .selectAll()
    .where('actor_key', '=', actorKey)
    .executeTakeFirst();
  return row && { login: row.github_login, githubId: row.github_id, ciphertext: row.token_ciphertext };
}

/** False once GitHub refused a draft pull request on this repository (its plan has no drafts). */
async function draftsAllowed(db: IntegrationDb<'github'>, repo: RepoRef): Promise<boolean> {
  const row = await db
    .selectFrom('github_repo_features')
    .select('drafts')
    .where('full_name', '=', `${repo.owner}/${repo.repo}`.toLowerCase())
    .executeTakeFirst();
  return row?.drafts ?? true;
}

async function rememberDrafts(db: IntegrationDb<'github'>, repo: RepoRef, drafts: boolean) {
  const fullName = `${repo.owner}/${repo.repo}`.toLowerCase();
  await db
    .insertInto('github_repo_features')
    .values({ full_name: fullName, drafts, learnt_at: new Date() })
    .onConflict((oc) => oc.column('full_name').doUpdateSet({ drafts, learnt_at: new Date() }))
    .execute();
}

/** Where the next look for lost webhook deliveries starts (see DeliverySweep); undefined before the first. */
async function deliveriesSince(db: IntegrationDb<'github'>): Promise<Date | undefined> {
  const row = await db.selectFrom('github_delivery_sweep').select('since').where('id', '=', 'app').executeTakeFirst();
  return row?.since;
}

async function saveDeliveriesSince(db: IntegrationDb<'github'>, since: Date) {
  await db
    .insertInto('github_delivery_sweep')
    .values({ id: 'app', since })
    .onConflict((oc) => oc.column('id').doUpdateSet({ since }))
    .execute();
}
