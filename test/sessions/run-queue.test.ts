import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startPatchbay } from '../../src/main.ts';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRunQueue } from '../../src/sessions/worker/run-queue.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const log = pino({ level: 'silent' });

describe('the run queue', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let remote: RemoteFixture;
  let dataDir: string;
  beforeAll(async () => {
    database = await createTestDatabase();
    remote = await createRemote();
    dataDir = await mkdtemp(join(tmpdir(), 'patchbay-queue-'));
  });
  afterAll(async () => {
    await database.close();
    await remote.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('hands a run that failed on every attempt to the given-up handler, once', async () => {
    const queue = await createRunQueue({
      url: database.url,
      log,
      retryLimit: 1,
      pollingIntervalSeconds: 0.5,
      monitorIntervalSeconds: 1,
    });
    try {
      let attempts = 0;
      const givenUp: { sessionId: string; attempts: number }[] = [];
      await queue.work(async () => {
        attempts += 1;
        throw new Error('cannot record');
      });
      await queue.workGivenUp(async (job) => void givenUp.push(job));
      await queue.enqueue('s-doomed');
      await waitFor(async () => givenUp.length > 0, 'the run to be given up', 20_000);
      expect(givenUp).toEqual([{ sessionId: 's-doomed', attempts: 2 }]);
      expect(attempts).toBe(2);
    } finally {
      await queue.stop();
    }
  });

  it('hands a run taken back from a worker that is gone out again at once, not after the retry delay', async () => {
    // Worker 1 takes the run and is then gone (its handler never ends; its process would be dead).
    const gone = await createRunQueue({ url: database.url, log, pollingIntervalSeconds: 0.5 });
    const taken: string[] = [];
    await gone.work(async (job) => {
      taken.push(job.sessionId);
      await new Promise(() => undefined);
    });
    await gone.enqueue('s-cut-off');
    await waitFor(async () => taken.length > 0, 'worker 1 to take the run');
    await gone.stopTaking();
    const restarted = await createRunQueue({ url: database.url, log, pollingIntervalSeconds: 0.5 });
    try {
      expect(await restarted.reclaimActive()).toBe(1);
      const { rows } = await sql<{ state: string; due: boolean }>`
        select state, start_after <= now() as due from pgboss.job where name = 'run-session' and singleton_key = 's-cut-off'`.execute(
        database.db,
      );
      expect(rows).toEqual([{ state: 'retry', due: true }]);
    } finally {
      await restarted.stop();
      await gone.stop().catch(() => undefined);
    }
  });

  it('picks up a queued session whose run never reached the queue', async () => {
    const config = loadConfig({ DATA_DIR: dataDir, DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    const writer = await startPatchbay(config, { log });
    await writer.store.create({
      id: 'orphan-session',
      repo: remote.remote,
      prompt: 'say hi',
      title: 'say hi',
      requester: { source: 'web', id: 'ada', name: 'Ada' },
      thread: { source: 'web' },
    });
    await sql`update sessions set updated_at = now() - interval '5 minutes' where id = 'orphan-session'`.execute(
      writer.database.db,
    );
    await writer.close();

    const worker = await startPatchbay(config, {
      log,
      work: true,
      model: createScriptedProvider({ scenario: [{ text: 'hi' }] }),
    });
    try {
      const done = await waitFor(async () => {
        const session = await worker.store.get('orphan-session');
        return session?.status === 'completed' ? session : undefined;
      }, 'the orphaned session to run');
      expect(done.result?.summary).toBe('hi');
    } finally {
      await worker.close();
    }
  });
});
