import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay } from '../../src/main.ts';
import { buildIntegrations } from '../../src/wire-integrations.ts';
import { startFakeLinear } from '../fakes/linear/fake-linear.ts';
import { deliveriesWorked } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

/**
 * Stored webhook deliveries (every Slack event of every channel the bot is in, every GitHub
 * event) are deleted once finished and older than DELIVERY_RETENTION_DAYS, by the real wiring
 * from the environment: a table that only grows is a disk that fills.
 */
describe('inbound delivery retention', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataDir: string;
  let linear: Awaited<ReturnType<typeof startFakeLinear>>;
  // Deliveries are worked (and kept tidy) by a process with a surface: Linear here, from the environment.
  const start = (env: Record<string, string>) => {
    const config = loadConfig({
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      PORT: '0',
      LOG_LEVEL: 'silent',
      SANDBOX_EGRESS_ALLOW: 'none',
      LINEAR_ACCESS_TOKEN: linear.accessToken,
      LINEAR_WEBHOOK_SECRET: 'lin_wh_retention-test-secret',
      LINEAR_API_URL: linear.apiUrl,
      ...env,
    });
    return startPatchbay(config, {
      log: pino({ level: 'silent' }),
      work: false,
      integrations: (context) => buildIntegrations(config, context),
    });
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'patchbay-retention-'));
    linear = await startFakeLinear();
  });
  afterAll(async () => {
    expect(linear.refused).toEqual([]);
    await linear?.close();
    await database?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const keys = async () =>
    (await database.db.selectFrom('inbound_deliveries').select('dedupe_key').orderBy('dedupe_key').execute()).map(
      (r) => r.dedupe_key,
    );

  it('deletes finished deliveries past the retention at start, keeps recent and unfinished ones, and keeps all with 0', async () => {
    const first = await start({});
    try {
      for (const key of ['old-done', 'old-failed', 'recent-done']) {
        expect(await first.inbound.accept({ source: 'test', dedupeKey: key, kind: 'event', body: '{}' })).toBe(
          'accepted',
        );
      }
      await deliveriesWorked(first);
    } finally {
      await first.close();
    }
    // Eight days ago, one of them failed on its last attempt; and one still waiting from back then.
    await sql`update inbound_deliveries set finished_at = now() - interval '8 days', received_at = now() - interval '8 days' where dedupe_key like 'old-%'`.execute(
      database.db,
    );
    await sql`update inbound_deliveries set status = 'failed' where dedupe_key = 'old-failed'`.execute(database.db);
    await sql`insert into inbound_deliveries (source, dedupe_key, kind, body, received_at, status, attempts) values ('test', 'old-pending', 'event', '{}', now() - interval '8 days', 'pending', 1)`.execute(
      database.db,
    );

    // Kept forever with 0.
    await (await start({ DELIVERY_RETENTION_DAYS: '0' })).close();
    expect(await keys()).toEqual(['old-done', 'old-failed', 'old-pending', 'recent-done']);

    // A week: the two finished eight days ago go; the waiting one is worked (by the start-up sweep), not deleted.
    const second = await start({ DELIVERY_RETENTION_DAYS: '7' });
    try {
      expect(await keys()).toEqual(['old-pending', 'recent-done']);
      await deliveriesWorked(second);
      expect(await keys()).toEqual(['old-pending', 'recent-done']);
    } finally {
      await second.close();
    }
  }, 60_000);
});
