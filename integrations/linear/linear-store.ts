import { sql } from 'kysely';
import { z } from 'zod';
import type { Db } from '../../db/database.ts';
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
export function createLinearStore(db: Db) {
  const toSession = (row: { agent_session_id: string; organization_id: string; issue_id: string; issue_identifier: string; session_id: string | null; pending: unknown }): LinearAgentSession => ({
    agentSessionId: row.agent_session_id,
    organizationId: row.organization_id,
    issueId: row.issue_id,
    issueIdentifier: row.issue_identifier,
    sessionId: row.session_id,
    pending: row.pending == null ? null : PendingTask.parse(row.pending),
  });

  return {
    async saveAgentSession(input: Omit<LinearAgentSession, 'sessionId' | 'pending'>): Promise<LinearAgentSession> {
      await db
        .insertInto('linear_agent_sessions')
        .values({ agent_session_id: input.agentSessionId, organization_id: input.organizationId, issue_id: input.issueId, issue_identifier: input.issueIdentifier })
        .onConflict((oc) => oc.column('agent_session_id').doNothing())
        .execute();
      return (await this.agentSession(input.agentSessionId))!;
    },

    async agentSession(agentSessionId: string): Promise<LinearAgentSession | undefined> {
      const row = await db.selectFrom('linear_agent_sessions').selectAll().where('agent_session_id', '=', agentSessionId).executeTakeFirst();
      return row && toSession(row);
    },

    async update(agentSessionId: string, patch: { sessionId?: string; pending?: PendingTask | null }): Promise<void> {
      await db
        .updateTable('linear_agent_sessions')
        .set({
          ...(patch.sessionId !== undefined && { session_id: patch.sessionId }),
          ...(patch.pending !== undefined && { pending: patch.pending === null ? null : JSON.stringify(patch.pending) }),
        })
        .where('agent_session_id', '=', agentSessionId)
        .execute();
    },

    async saveInstallation(input: { organizationId: string; appUserId: string; ciphertext: string; scope: string }): Promise<void> {
      await db
        .insertInto('linear_installations')
        .values({ organization_id: input.organizationId, app_user_id: input.appUserId, token_ciphertext: input.ciphertext, scope: input.scope })
        .onConflict((oc) =>
          oc.column('organization_id').doUpdateSet({ app_user_id: input.appUserId, token_ciphertext: input.ciphertext, scope: input.scope, updated_at: sql`now()` }),
        )
        .execute();
    },

    async installation(organizationId: string): Promise<{ appUserId: string; ciphertext: string } | undefined> {
      const row = await db.selectFrom('linear_installations').selectAll().where('organization_id', '=', organizationId).executeTakeFirst();
      return row && { appUserId: row.app_user_id, ciphertext: row.token_ciphertext };
    },
  };
}
