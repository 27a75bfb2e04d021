import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Database, IntegrationDb, IntegrationTables } from '../../db/schema.ts';
import type { IntegrationContext } from '../../integrations/integration-module.ts';
import { createLinearStore } from '../../integrations/linear/linear-store.ts';
import { createSlackStore } from '../../integrations/slack/slack-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * Queries no integration can write: each line is a compile error, so `npm run typecheck` fails
 * (an unused `@ts-expect-error`) the day an integration's handle reaches another's tables or the
 * sessions. Never called: the compiler is what runs it.
 */
function queriesOutsideItsTables(
  slack: IntegrationContext<'slack'>,
  github: IntegrationContext<'github'>,
  linear: IntegrationContext<'linear'>,
): unknown[] {
  return [
    // @ts-expect-error Linear's installations are not the Slack module's
    slack.db.selectFrom('linear_installations'),
    // @ts-expect-error sessions are read through context.sessions, not the database
    slack.db.selectFrom('sessions'),
    // @ts-expect-error Slack's posts are not the GitHub module's
    github.db.selectFrom('slack_posts'),
    // @ts-expect-error the inbound pipeline's table is not an integration's
    github.db.selectFrom('inbound_deliveries'),
    // @ts-expect-error GitHub's stored tokens are not the Linear module's
    linear.db.deleteFrom('github_user_tokens'),
  ];
}

describe("each integration's database handle", () => {
  it("refuses, at compile time, queries on tables that are not the integration's own", () => {
    expectTypeOf(queriesOutsideItsTables).parameters.toEqualTypeOf<
      [IntegrationContext<'slack'>, IntegrationContext<'github'>, IntegrationContext<'linear'>]
    >();
  });

  it('names every integration table once, under the integration it belongs to', () => {
    type Prefixed = Extract<keyof Database, `slack_${string}` | `github_${string}` | `linear_${string}`>;
    expectTypeOf<IntegrationTables[keyof IntegrationTables]>().toEqualTypeOf<Prefixed>();
    expectTypeOf<IntegrationTables['slack']>().toEqualTypeOf<Extract<Prefixed, `slack_${string}`>>();
    expectTypeOf<IntegrationTables['linear']>().toEqualTypeOf<Extract<Prefixed, `linear_${string}`>>();
  });

  it("works on the integration's own tables, given the root's full handle", async () => {
    const database = await createTestDatabase();
    try {
      const slackDb: IntegrationDb<'slack'> = database.db;
      const thread = { source: 'slack', teamId: 'T1', channel: 'C1', threadTs: '1.1' } as const;
      const slack = createSlackStore(slackDb);
      await slack.savePending({
        thread,
        text: 'fix it',
        actor: { source: 'slack', id: 'U1', name: 'Ann' },
        candidates: null,
      });
      expect((await slack.pending(thread))?.text).toBe('fix it');
      expect(await createLinearStore(database.db).installation('org-none')).toBeUndefined();
    } finally {
      await database.close();
    }
  });
});
