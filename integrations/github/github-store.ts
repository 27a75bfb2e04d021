import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import type { RepoRef } from '../../src/core/repo-ref.ts';

type NewBody = { lastBody: string };

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
  startSeq: number;
  lastBody: string | null;
  finished: boolean;
};

/**
 * The GitHub integration's own tables (migration 004): installations and their repositories,
 * requests and their progress comments, people's stored tokens, CI failures and autofix settings.
 */
export class GitHubStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async upsertInstallation(input: {
    id: number;
    accountLogin: string;
    accountType: string;
    repositorySelection: string;
    suspended: boolean;
  }) {
    await this.#db
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

  async deleteInstallation(id: number) {
    await this.#db.deleteFrom('github_installations').where('id', '=', id).execute();
  }

  async addRepos(installationId: number, repos: { id: number; fullName: string }[]) {
    if (repos.length === 0) return;
    await this.#db
      .insertInto('github_installation_repos')
      .values(
        repos.map((r) => ({ installation_id: installationId, repo_id: r.id, full_name: r.fullName.toLowerCase() })),
      )
      .onConflict((oc) =>
        oc.columns(['installation_id', 'repo_id']).doUpdateSet({ full_name: sql`excluded.full_name` }),
      )
      .execute();
  }

  async removeRepos(installationId: number, repoIds: number[]) {
    if (repoIds.length === 0) return;
    await this.#db
      .deleteFrom('github_installation_repos')
      .where('installation_id', '=', installationId)
      .where('repo_id', 'in', repoIds)
      .execute();
  }

  async reposOf(installationId: number): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('github_installation_repos')
      .select('full_name')
      .where('installation_id', '=', installationId)
      .orderBy('full_name')
      .execute();
    return rows.map((r) => r.full_name);
  }

  /** owner/name (lower-case) of every repository of an active installation. */
  async installedRepos(): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('github_installation_repos')
      .innerJoin('github_installations', 'github_installations.id', 'github_installation_repos.installation_id')
      .select('github_installation_repos.full_name')
      .distinct()
      .where('github_installations.suspended', '=', false)
      .orderBy('github_installation_repos.full_name')
      .execute();
    return rows.map((r) => r.full_name);
  }

  async installation(id: number) {
    return this.#db.selectFrom('github_installations').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** The active installation that covers a repository, when the webhooks told us about it. */
  async installationFor(repo: RepoRef): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('github_installation_repos')
      .innerJoin('github_installations', 'github_installations.id', 'github_installation_repos.installation_id')
      .select('github_installations.id')
      .where('github_installation_repos.full_name', '=', `${repo.owner}/${repo.repo}`.toLowerCase())
      .where('github_installations.suspended', '=', false)
      .executeTakeFirst();
    return row?.id;
  }

  /** Made before the session service sees the request, so the replier never runs ahead of it. */
  async createRequest(
    input: Omit<GitHubRequest, 'id' | 'lastBody' | 'finished' | 'sessionId' | 'commentIntendedAt'> & NewBody,
  ): Promise<number> {
    const row = await this.#db
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

  async openRequests(threadKey: string): Promise<GitHubRequest[]> {
    const rows = await this.#db
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
      startSeq: r.start_seq,
      lastBody: r.last_body,
      finished: r.finished,
    }));
  }

  /** Records that the progress comment is about to be posted; true when a post begun before (by any process) was not recorded. */
  async intendComment(id: number): Promise<boolean> {
    const row = await this.#db
      .updateTable('github_requests')
      .set({ comment_intended_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where('comment_intended_at', 'is', null)
      .returning('id')
      .executeTakeFirst();
    return row === undefined;
  }

  async updateRequest(
    id: number,
    patch: { lastBody?: string; finished?: boolean; sessionId?: string; commentId?: number },
  ) {
    await this.#db
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

  async saveUserToken(input: { actorKey: string; login: string; githubId: number; ciphertext: string }) {
    await this.#db
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

  async userToken(actorKey: string): Promise<{ login: string; githubId: number; ciphertext: string } | undefined> {
    const row = await this.#db
      .selectFrom('github_user_tokens')
      .selectAll()
      .where('actor_key', '=', actorKey)
      .executeTakeFirst();
    return row && { login: row.github_login, githubId: row.github_id, ciphertext: row.token_ciphertext };
  }

  /**
   * Claims the CI failure on a pull request's head commit for one delivery. True when this
   * delivery holds it (first, or its own retry); false when another delivery took it.
   */
  async claimCiFailure(input: {
    owner: string;
    repo: string;
    number: number;
    headSha: string;
    sessionId: string;
    claimedBy: string;
  }): Promise<boolean> {
    const where = {
      owner: input.owner.toLowerCase(),
      repo: input.repo.toLowerCase(),
      number: input.number,
      head_sha: input.headSha,
    };
    await this.#db
      .insertInto('github_ci_failures')
      .values({ ...where, session_id: input.sessionId, claimed_by: input.claimedBy })
      .onConflict((oc) => oc.columns(['owner', 'repo', 'number', 'head_sha']).doNothing())
      .execute();
    const row = await this.#db
      .selectFrom('github_ci_failures')
      .select('claimed_by')
      .where('owner', '=', where.owner)
      .where('repo', '=', where.repo)
      .where('number', '=', where.number)
      .where('head_sha', '=', where.head_sha)
      .executeTakeFirst();
    return row?.claimed_by === input.claimedBy;
  }

  async decideCiFailure(input: {
    owner: string;
    repo: string;
    number: number;
    headSha: string;
    followUp: boolean;
    names: string[];
    signature: string;
    reason?: string;
  }) {
    await this.#db
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
  async ciFailures(
    owner: string,
    repo: string,
    number: number,
    exceptSha: string,
  ): Promise<{ headSha: string; followUp: boolean; signature: string | null; names: string[] }[]> {
    const rows = await this.#db
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
  async ciFailureAt(
    owner: string,
    repo: string,
    number: number,
    headSha: string,
  ): Promise<{ names: string[] } | undefined> {
    const row = await this.#db
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

  /** False once GitHub refused a draft pull request on this repository (its plan has no drafts). */
  async draftsAllowed(repo: RepoRef): Promise<boolean> {
    const row = await this.#db
      .selectFrom('github_repo_features')
      .select('drafts')
      .where('full_name', '=', `${repo.owner}/${repo.repo}`.toLowerCase())
      .executeTakeFirst();
    return row?.drafts ?? true;
  }

  async rememberDrafts(repo: RepoRef, drafts: boolean) {
    const fullName = `${repo.owner}/${repo.repo}`.toLowerCase();
    await this.#db
      .insertInto('github_repo_features')
      .values({ full_name: fullName, drafts, learnt_at: new Date() })
      .onConflict((oc) => oc.column('full_name').doUpdateSet({ drafts, learnt_at: new Date() }))
      .execute();
  }

  /** Where the next look for lost webhook deliveries starts (see DeliverySweep); undefined before the first. */
  async deliveriesSince(): Promise<Date | undefined> {
    const row = await this.#db
      .selectFrom('github_delivery_sweep')
      .select('since')
      .where('id', '=', 'app')
      .executeTakeFirst();
    return row?.since;
  }

  async saveDeliveriesSince(since: Date) {
    await this.#db
      .insertInto('github_delivery_sweep')
      .values({ id: 'app', since })
      .onConflict((oc) => oc.column('id').doUpdateSet({ since }))
      .execute();
  }

  /** Whether CI failures start follow-ups on this pull request (on unless someone said `autofix off`). */
  async autofix(owner: string, repo: string, number: number): Promise<boolean> {
    const row = await this.#db
      .selectFrom('github_pull_autofix')
      .select('enabled')
      .where('owner', '=', owner.toLowerCase())
      .where('repo', '=', repo.toLowerCase())
      .where('number', '=', number)
      .executeTakeFirst();
    return row?.enabled ?? true;
  }

  async setAutofix(owner: string, repo: string, number: number, enabled: boolean, by: string) {
    await this.#db
      .insertInto('github_pull_autofix')
      .values({ owner: owner.toLowerCase(), repo: repo.toLowerCase(), number, enabled, set_by: by })
      .onConflict((oc) =>
        oc.columns(['owner', 'repo', 'number']).doUpdateSet({ enabled, set_by: by, updated_at: sql`now()` }),
      )
      .execute();
  }
}

/** The store over the integration's tables in `db`. */
export function createGitHubStore(db: Db): GitHubStore {
  return new GitHubStore(db);
}
