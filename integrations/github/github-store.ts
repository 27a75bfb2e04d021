import { sql } from 'kysely';
import type { Db } from '../../db/database.ts';
import { SessionEvent, type StoredEvent } from '../../src/core/events.ts';
import type { RepoRef } from '../../src/core/repo-ref.ts';

export type GitHubRequest = {
  id: number;
  sessionId: string | null;
  threadKey: string;
  owner: string;
  repo: string;
  number: number;
  commentKind: 'issue' | 'review';
  commentId: number | null;
  startSeq: number;
  lastBody: string | null;
  finished: boolean;
};

export type GitHubStore = ReturnType<typeof createGitHubStore>;

/** The GitHub integration's own tables (migration 004). */
export function createGitHubStore(db: Db) {
  return {
    async upsertInstallation(input: { id: number; accountLogin: string; accountType: string; repositorySelection: string; suspended: boolean }) {
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
    },

    async deleteInstallation(id: number) {
      await db.deleteFrom('github_installations').where('id', '=', id).execute();
    },

    async addRepos(installationId: number, repos: { id: number; fullName: string }[]) {
      if (repos.length === 0) return;
      await db
        .insertInto('github_installation_repos')
        .values(repos.map((r) => ({ installation_id: installationId, repo_id: r.id, full_name: r.fullName.toLowerCase() })))
        .onConflict((oc) => oc.columns(['installation_id', 'repo_id']).doUpdateSet({ full_name: sql`excluded.full_name` }))
        .execute();
    },

    async removeRepos(installationId: number, repoIds: number[]) {
      if (repoIds.length === 0) return;
      await db.deleteFrom('github_installation_repos').where('installation_id', '=', installationId).where('repo_id', 'in', repoIds).execute();
    },

    async reposOf(installationId: number): Promise<string[]> {
      const rows = await db.selectFrom('github_installation_repos').select('full_name').where('installation_id', '=', installationId).orderBy('full_name').execute();
      return rows.map((r) => r.full_name);
    },

    /** owner/name (lower-case) of every repository of an active installation. */
    async installedRepos(): Promise<string[]> {
      const rows = await db
        .selectFrom('github_installation_repos')
        .innerJoin('github_installations', 'github_installations.id', 'github_installation_repos.installation_id')
        .select('github_installation_repos.full_name')
        .distinct()
        .where('github_installations.suspended', '=', false)
        .orderBy('github_installation_repos.full_name')
        .execute();
      return rows.map((r) => r.full_name);
    },

    async installation(id: number) {
      return db.selectFrom('github_installations').selectAll().where('id', '=', id).executeTakeFirst();
    },

    /** The active installation that covers a repository, when the webhooks told us about it. */
    async installationFor(repo: RepoRef): Promise<number | undefined> {
      const row = await db
        .selectFrom('github_installation_repos')
        .innerJoin('github_installations', 'github_installations.id', 'github_installation_repos.installation_id')
        .select('github_installations.id')
        .where('github_installation_repos.full_name', '=', `${repo.owner}/${repo.repo}`.toLowerCase())
        .where('github_installations.suspended', '=', false)
        .executeTakeFirst();
      return row?.id;
    },

    /** Made before the session service sees the request, so deliveries never run ahead of it. */
    async createRequest(input: Omit<GitHubRequest, 'id' | 'lastBody' | 'finished' | 'sessionId'> & { lastBody: string }): Promise<number> {
      const row = await db
        .insertInto('github_requests')
        .values({
          thread_key: input.threadKey,
          owner: input.owner,
          repo: input.repo,
          number: input.number,
          comment_kind: input.commentKind,
          comment_id: input.commentId,
          start_seq: input.startSeq,
          last_body: input.lastBody,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    },

    async openRequests(threadKey: string): Promise<GitHubRequest[]> {
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
        startSeq: r.start_seq,
        lastBody: r.last_body,
        finished: r.finished,
      }));
    },

    async updateRequest(id: number, patch: { lastBody?: string; finished?: boolean; sessionId?: string; commentId?: number }) {
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
    },

    async saveUserToken(input: { actorKey: string; login: string; githubId: number; ciphertext: string }) {
      await db
        .insertInto('github_user_tokens')
        .values({ actor_key: input.actorKey, github_login: input.login, github_id: input.githubId, token_ciphertext: input.ciphertext })
        .onConflict((oc) =>
          oc.column('actor_key').doUpdateSet({ github_login: input.login, github_id: input.githubId, token_ciphertext: input.ciphertext, updated_at: sql`now()` }),
        )
        .execute();
    },

    async userToken(actorKey: string): Promise<{ login: string; githubId: number; ciphertext: string } | undefined> {
      const row = await db.selectFrom('github_user_tokens').selectAll().where('actor_key', '=', actorKey).executeTakeFirst();
      return row && { login: row.github_login, githubId: row.github_id, ciphertext: row.token_ciphertext };
    },

    /** The GitHub issues a session's threads point at (for "Fixes #N"). */
    async issueThreads(sessionId: string): Promise<{ owner: string; repo: string; number: number }[]> {
      const rows = await db
        .selectFrom('session_threads')
        .select('thread')
        .where('session_id', '=', sessionId)
        .where(sql<string>`thread->>'source'`, '=', 'github')
        .where(sql<string>`thread->>'kind'`, '=', 'issue')
        .orderBy('id')
        .execute();
      return rows.map((r) => r.thread as { owner: string; repo: string; number: number });
    },

    /** A session's events of the given types (for the PR description). */
    async sessionEvents(sessionId: string, types: string[]): Promise<StoredEvent[]> {
      const rows = await db
        .selectFrom('session_events')
        .select(['seq', 'at', 'data'])
        .where('session_id', '=', sessionId)
        .where('type', 'in', types)
        .orderBy('seq')
        .execute();
      return rows.map((r) => ({ sessionId, seq: r.seq, at: r.at.toISOString(), event: SessionEvent.parse(r.data) }));
    },
  };
}
