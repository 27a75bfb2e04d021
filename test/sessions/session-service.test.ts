import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createSessionService } from '../../src/sessions/inbound/session-service.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const alice: Actor = { source: 'slack', id: 'U1', name: 'Alice' };
const thread = (ts: string) => ({ source: 'slack' as const, teamId: 'T1', channel: 'C1', threadTs: ts });

describe('session service deliveries', () => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  beforeAll(async () => {
    handle = await createTestDatabase();
    store = createSessionStore(handle.db);
  });
  afterAll(() => handle.close());

  it('writes a redelivered start, message or stop once', async () => {
    const enqueued: string[] = [];
    const service = createSessionService({
      store,
      queue: { enqueue: async (id) => void enqueued.push(id) },
      log: pino({ level: 'silent' }),
    });
    const start = {
      kind: 'start' as const,
      thread: thread('1.1'),
      actor: alice,
      text: 'fix it',
      repo: 'r',
      dedupeKey: 'Ev1',
    };
    const first = await service.handle(start);
    expect(first.kind).toBe('started');
    expect(await service.handle(start)).toEqual({ kind: 'duplicate' });
    const reply = {
      kind: 'message' as const,
      thread: thread('1.1'),
      actor: alice,
      text: 'and the docs',
      dedupeKey: 'Ev2',
    };
    expect((await service.handle(reply)).kind).toBe('appended');
    expect(await service.handle(reply)).toEqual({ kind: 'duplicate' });
    const id = first.kind === 'started' ? first.session.id : '';
    const messages = (await store.events(id, { types: ['user-message'] })).map(
      (e) => e.event.type === 'user-message' && e.event.text,
    );
    expect(messages).toEqual(['fix it', 'and the docs']);
    expect(enqueued).toEqual([id, id]);
  });

  it('leaves a delivery free to be retried when its write failed', async () => {
    const ids = ['fixed-id', 'fixed-id', 'another-id'];
    const service = createSessionService({
      store,
      queue: { enqueue: async () => {} },
      log: pino({ level: 'silent' }),
      newId: () => ids.shift()!,
    });
    expect(
      (
        await service.handle({
          kind: 'start',
          thread: thread('2.1'),
          actor: alice,
          text: 'one',
          repo: 'r',
          dedupeKey: 'Ev10',
        })
      ).kind,
    ).toBe('started');
    const second = {
      kind: 'start' as const,
      thread: thread('2.2'),
      actor: alice,
      text: 'two',
      repo: 'r',
      dedupeKey: 'Ev11',
    };
    // The id collides, so the session insert fails and takes the delivery record with it.
    await expect(service.handle(second)).rejects.toThrow();
    const retried = await service.handle(second);
    expect(retried.kind).toBe('started');
    expect(retried.kind === 'started' && retried.session.id).toBe('another-id');
  });
});
