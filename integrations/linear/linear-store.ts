import { sql } from 'kysely';
import { z } from 'zod';
import type { IntegrationDb } from '../../db/schema.ts';
import { Actor } from '../../src/core/actor.ts';

/** A task that waits for the person to say which repository to work in. */
export const PendingTask = z.object({
  text: z.string(),
  actor: Actor,
  /** Repository URLs offered in the elicitation. */
  candidates: z.array(z.string()),
});
export type PendingTask = z.infer<typeof PendingTask>;

export type LinearAgentSession = {
  agentSessionId: string;
  organizationId: string;
  issueId: string;
  issueIdentifier: string;
  sessionId: string | null;
  pending: PendingTask | null;
};

export type LinearStore = ReturnType<typeof createLinearStore>;

/** The Linear integration's own tables (migration 007): its agent sessions and installations. */
export function createLinearStore(db: IntegrationDb<'linear'>) {
  return { ...agentSessionRows(db), ...installationRows(db) };
}

/** `linear_agent_sessions`: each Linear agent session, its Patchbay session and a task waiting for its repository. */
function agentSessionRows(db: IntegrationDb<'linear'>) {
  const store = {
    async saveAgentSession(input: Omit<LinearAgentSession, 'sessionId' | 'pending'>): Promise<LinearAgentSession> {
      await db
        .insertInto('linear_agent_sessions')
        .values({
          agent_session_id: input.agentSessionId,
          organization_id: input.organizationId,
          issue_id: input.issueId,
          issue_identifier: input.issueIdentifier,
        })
        .onConflict((oc) => oc.column('agent_session_id').doNothing())
        .execute();
      return (await store.agentSession(input.agentSessionId))!;
    },

    async agentSession(agentSessionId: string): Promise<LinearAgentSession | undefined> {
      const row = await db
        .selectFrom('linear_agent_sessions')
        .selectAll()
        .where('agent_session_id', '=', agentSessionId)
        .executeTakeFirst();
      return row && toSession(row);
    },

    async update(agentSessionId: string, patch: { sessionId?: string; pending?: PendingTask | null }): Promise<void> {
      await db
        .updateTable('linear_agent_sessions')
        .set({
          ...(patch.sessionId !== undefined && { session_id: patch.sessionId }),
          ...(patch.pending !== undefined && {
            pending: patch.pending === null ? null : JSON.stringify(patch.pending),
          }),
        })
        .where('agent_session_id', '=', agentSessionId)
        .execute();
    },

    /** The workspace's agent sessions that started a Patchbay session (whose status the session store knows). */
    async agentSessionsWithSessions(organizationId: string): Promise<LinearAgentSession[]> {
      const rows = await db
        .selectFrom('linear_agent_sessions')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('session_id', 'is not', null)
        .execute();
      return rows.map(toSession);
    },
  };
  return store;
}

/** `linear_installations`: each workspace's app user and sealed tokens. */
function installationRows(db: IntegrationDb<'linear'>) {
  return {
    async saveInstallation(
      input: InstallationTokens & { organizationId: string; appUserId: string; scope: string },
    ): Promise<void> {
      const tokens = {
        token_ciphertext: input.ciphertext,
        refresh_token_ciphertext: input.refreshCiphertext ?? null,
        expires_at: input.expiresAt ?? null,
      };
      await db
        .insertInto('linear_installations')
        .values({ organization_id: input.organizationId, app_user_id: input.appUserId, scope: input.scope, ...tokens })
        .onConflict((oc) =>
          oc
            .column('organization_id')
            .doUpdateSet({ app_user_id: input.appUserId, scope: input.scope, ...tokens, updated_at: sql`now()` }),
        )
        .execute();
    },

    async installation(organizationId: string): Promise<Installation | undefined> {
      const row = await db
        .selectFrom('linear_installations')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .executeTakeFirst();
      return row && toInstallation(row);
    },

    /**
     * Runs `work` holding the installation's row (SELECT … FOR UPDATE): every process sharing the
     * database refreshes a workspace's token one at a time, and the next one sees the token the
     * first stored. `work` returns the tokens to store, or undefined to leave them.
     */
    async withInstallationLocked<T>(
      organizationId: string,
      work: (installation: Installation | undefined) => Promise<{ save?: InstallationTokens; result: T }>,
    ): Promise<T> {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('linear_installations')
          .selectAll()
          .where('organization_id', '=', organizationId)
          .forUpdate()
          .executeTakeFirst();
        const { save, result } = await work(row && toInstallation(row));
        if (save) {
          await trx
            .updateTable('linear_installations')
            .set({
              token_ciphertext: save.ciphertext,
              refresh_token_ciphertext: save.refreshCiphertext ?? null,
              expires_at: save.expiresAt ?? null,
              updated_at: sql`now()`,
            })
            .where('organization_id', '=', organizationId)
            .execute();
        }
        return result;
      });
    },
  };
}

function toSession(row: {
  agent_session_id: string;
  organization_id: string;
  issue_id: string;
  issue_identifier: string;
  session_id: string | null;
  pending: unknown;
}): LinearAgentSession {
  return {
    agentSessionId: row.agent_session_id,
    organizationId: row.organization_id,
    issueId: row.issue_id,
    issueIdentifier: row.issue_identifier,
    sessionId: row.session_id,
    pending: row.pending == null ? null : PendingTask.parse(row.pending),
  };
}

/** The tokens of an installation as stored: sealed (see secret-box), with the access token's expiry. */
export type InstallationTokens = { ciphertext: string; refreshCiphertext?: string | null; expiresAt?: Date | null };

export type Installation = {
  appUserId: string;
  ciphertext: string;
  refreshCiphertext: string | null;
  expiresAt: Date | null;
  updatedAt: Date;
};

function toInstallation(row: {
  app_user_id: string;
  token_ciphertext: string;
  refresh_token_ciphertext: string | null;
  expires_at: Date | null;
  updated_at: Date;
}): Installation {
  return {
    appUserId: row.app_user_id,
    ciphertext: row.token_ciphertext,
    refreshCiphertext: row.refresh_token_ciphertext,
    expiresAt: row.expires_at,
    updatedAt: row.updated_at,
  };
}
