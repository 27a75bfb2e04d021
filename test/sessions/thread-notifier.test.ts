import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThreadReplier, ThreadUpdate } from '../../src/core/thread-replier.ts';
import type { Actor } from '../../src/core/actor.ts';
import { createEventBus, type EventBus } from '../../src/sessions/notify/event-bus.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { startThreadNotifier } from '../../src/sessions/notify/thread-notifier.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const alice: Actor = { source: 'slack', id: 'U1', name: 'Alice' };
const log = pino({ level: 'silent' });

describe('thread notifier', () => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  let bus: EventBus;

  beforeAll(async () => {
    handle = await createTestDatabase();
    store = createSessionStore(handle.db);
    bus = await createEventBus({ url: handle.url, log });
  });
  afterAll(async () => {
    await bus.close();
    await handle.close();
  });

  it('catches up with more sessions behind than the pool has connections', { timeout: 30_000 }, async () => {
    // The test database's pool holds 5 connections; twice as many sessions are behind at start.
    const ids = Array.from({ length: 10 }, (_, i) => `s-behind-${i}`);
    for (const [i, id] of ids.entries()) {
      await store.create({
        id,
        repo: 'r',
        prompt: 'p',
        title: 't',
        requester: alice,
        thread: { source: 'slack', teamId: 'T1', channel: 'C1', threadTs: `${i}.0` },
      });
    }
    const replied = new Map<string, number>();
    const slack: ThreadReplier = {
      source: 'slack',
      async reply(input: ThreadUpdate) {
        replied.set(input.session.id, input.events.at(-1)!.seq);
        return { state: undefined };
      },
    };
    const notifier = startThreadNotifier({ store, db: handle.db, bus, repliers: [slack], log, sweepMs: 60_000 });
    try {
      await waitFor(async () => replied.size === ids.length, 'every session to be replied to', 15_000);
      // A pass's cursor is written after reply() returns: wait for that mark, not for the call.
      const cursors = () =>
        handle.db
          .selectFrom('session_threads')
          .select(['session_id', 'replied_seq'])
          .where('session_id', 'in', ids)
          .execute();
      await waitFor(
        async () => (await cursors()).every((c) => c.replied_seq === 2),
        'every cursor to be written',
        15_000,
      );
      expect((await cursors()).map((c) => c.replied_seq)).toEqual(ids.map(() => 2));
    } finally {
      await notifier.close();
    }
  });

  it('gives up on a reply that hangs, keeps the cursor, and replies with the batch on a later pass', {
    timeout: 30_000,
  }, async () => {
    await store.create({
      id: 's-hang',
      repo: 'r',
      prompt: 'p',
      title: 't',
      requester: alice,
      thread: { source: 'slack', teamId: 'T1', channel: 'C2', threadTs: '9.0' },
    });
    let calls = 0;
    const slack: ThreadReplier = {
      source: 'slack',
      async reply() {
        calls += 1;
        if (calls === 1) await new Promise(() => {}); // never settles
        return { state: { posted: true } };
      },
    };
    const notifier = startThreadNotifier({
      store,
      db: handle.db,
      bus,
      repliers: [slack],
      log,
      sweepMs: 300,
      replyTimeoutMs: 500,
    });
    try {
      const cursor = async () =>
        await handle.db
          .selectFrom('session_threads')
          .select(['replied_seq', 'state'])
          .where('session_id', '=', 's-hang')
          .executeTakeFirstOrThrow();
      await waitFor(async () => (await cursor()).replied_seq === 2, 'the retried reply', 10_000);
      expect(calls).toBeGreaterThanOrEqual(2);
      expect((await cursor()).state).toEqual({ posted: true });
    } finally {
      await notifier.close();
    }
  });
});
