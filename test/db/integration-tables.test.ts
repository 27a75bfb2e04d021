import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { DatabaseHandle } from '../../db/database.ts';
import type { Database, IntegrationDb, IntegrationTables } from '../../db/schema.ts';
import { contextFor, type IntegrationContext } from '../../integrations/integration-module.ts';
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

/** A handle as a cast or a wrong type would see it: any table, any column, so only the run-time guard stands. */
type Untyped = Kysely<Record<string, Record<string, unknown>>>;

/** Per integration: one of its own tables, and one table of each other integration. */
const cases = [
  { integration: 'slack', own: 'slack_posts', others: ['github_requests', 'linear_installations'] },
  { integration: 'github', own: 'github_requests', others: ['slack_posts', 'linear_agent_sessions'] },
  { integration: 'linear', own: 'linear_installations', others: ['slack_pending_tasks', 'github_user_tokens'] },
] as const;

describe("each integration's database handle, at run time (the handle the composition root gives it)", () => {
  let database: DatabaseHandle & { name: string };
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(() => database?.close());

  /** `integration`'s handle exactly as `buildIntegrations` makes it, seen through a cast. */
  const handleOf = (integration: keyof IntegrationTables): Untyped =>
    contextFor({ db: database.db } as IntegrationContext, integration).db as unknown as Untyped;

  describe.each(cases)('$integration', ({ integration, own, others }) => {
    const refused = (table: string) =>
      new RegExp(`The ${integration} integration's database handle refused a query on ${table}:`);

    it.each(others)(
      'refuses %s in a select, a join, an insert, a subquery, a transaction and sql.table',
      async (other) => {
        const db = handleOf(integration);
        await expect(db.selectFrom(other).selectAll().execute()).rejects.toThrow(refused(other));
        await expect(
          db.selectFrom(`${own} as mine`).innerJoin(`${other} as theirs`, 'theirs.id', 'mine.id').selectAll().execute(),
        ).rejects.toThrow(refused(other));
        await expect(db.insertInto(other).values({ id: 'x' }).execute()).rejects.toThrow(refused(other));
        await expect(
          db
            .selectFrom(own)
            .selectAll()
            .where((eb) => eb.exists(eb.selectFrom(other).select('id')))
            .execute(),
        ).rejects.toThrow(refused(other));
        await expect(db.transaction().execute((trx) => trx.deleteFrom(other).execute())).rejects.toThrow(
          refused(other),
        );
        await expect(sql`select count(*) from ${sql.table(other)}`.execute(db)).rejects.toThrow(refused(other));
      },
    );

    it('runs queries on its own tables and on the shared ones', async () => {
      const db = handleOf(integration);
      expect(await db.selectFrom(own).selectAll().execute()).toEqual([]);
      expect(await db.selectFrom('sessions').select('id').limit(1).execute()).toEqual([]);
      expect(
        await db
          .selectFrom(own)
          .selectAll()
          .where((eb) => eb.exists(eb.selectFrom('session_threads').select('session_id')))
          .execute(),
      ).toEqual([]);
    });
  });
});
