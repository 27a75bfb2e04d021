import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase, databaseTargets } from '../helpers/test-database.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice', email: 'alice@example.com' };

describe.each(databaseTargets())('session store on $name PostgreSQL', (target) => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;

  beforeAll(async () => {
    handle = await createTestDatabase(target);
    store = createSessionStore(handle.db);
  });
  afterAll(() => handle.close());

  it('creates a session with its thread, creation event and first user message', async () => {
    const thread = { source: 'slack' as const, teamId: 'T1', channel: 'C1', threadTs: '1.0001' };
    const { session, events } = await store.create({
      id: 's-create',
      repo: 'https://github.com/o/r',
      prompt: 'fix it',
      title: 'fix it',
      requester: alice,
      thread,
    });
    expect(session.status).toBe('queued');
    expect(events.map((e) => [e.seq, e.event.type])).toEqual([
      [1, 'session-created'],
      [2, 'user-message'],
    ]);
    expect((await store.findByThread(thread))?.id).toBe('s-create');
    expect(await store.threads('s-create')).toEqual([thread]);
  });

  it('numbers events per session without gaps and skips a replayed dedupe key', async () => {
    await store.create({
      id: 's-seq',
      repo: 'r',
      prompt: 'p',
      title: 't',
      requester: alice,
      thread: { source: 'web' },
    });
    const first = await store.append('s-seq', [
      { event: { type: 'assistant-message', text: 'hi', turn: 0 }, dedupeKey: 'turn:0' },
    ]);
    const replay = await store.append('s-seq', [
      { event: { type: 'assistant-message', text: 'hi', turn: 0 }, dedupeKey: 'turn:0' },
    ]);
    expect(first.map((e) => e.seq)).toEqual([3]);
    expect(replay).toEqual([]);
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.append('s-seq', [{ event: { type: 'error', code: 'x', message: String(i) } }]),
      ),
    );
    const seqs = (await store.events('s-seq')).map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: 23 }, (_, i) => i + 1));
  });

  it('applies lifecycle triggers and records each status change', async () => {
    await store.create({
      id: 's-life',
      repo: 'r',
      prompt: 'p',
      title: 't',
      requester: alice,
      thread: { source: 'web' },
    });
    expect((await store.transition('s-life', 'start')).session.status).toBe('running');
    expect((await store.transition('s-life', 'ask', { reason: 'question' })).session.status).toBe('waiting');
    const stop = await store.transition('s-life', 'cancel');
    expect(stop.session.status).toBe('cancelled');
    const again = await store.transition('s-life', 'cancel');
    expect(again.applied).toBe(false);
    const changes = (await store.events('s-life', { types: ['status-changed'] })).map((e) => e.event);
    expect(changes).toEqual([
      { type: 'status-changed', from: 'queued', to: 'running' },
      { type: 'status-changed', from: 'running', to: 'waiting', reason: 'question' },
      { type: 'status-changed', from: 'waiting', to: 'cancelled' },
    ]);
  });

  it('commits transcript, events and usage in one step', async () => {
    await store.create({
      id: 's-step',
      repo: 'r',
      prompt: 'p',
      title: 't',
      requester: alice,
      thread: { source: 'web' },
    });
    await store.commitStep('s-step', {
      messages: [
        { message: { role: 'user', content: 'p' }, eventSeq: 2 },
        { message: { role: 'assistant', content: 'ok' } },
      ],
      events: [{ event: { type: 'assistant-message', text: 'ok', turn: 0 } }],
      usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 3, cacheWriteTokens: 1 },
    });
    const transcript = await store.transcript('s-step');
    expect(transcript.map((t) => [t.idx, t.message.role, t.eventSeq])).toEqual([
      [0, 'user', 2],
      [1, 'assistant', null],
    ]);
    expect((await store.get('s-step'))?.usage).toEqual({
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 3,
      cacheWriteTokens: 1,
    });
  });

  it('rejects an event that does not match the vocabulary and writes nothing', async () => {
    await store.create({
      id: 's-bad',
      repo: 'r',
      prompt: 'p',
      title: 't',
      requester: alice,
      thread: { source: 'web' },
    });
    await expect(store.append('s-bad', [{ event: { type: 'nonsense' } as never }])).rejects.toThrow();
    expect((await store.get('s-bad'))?.lastSeq).toBe(2);
  });

  it('records each dedupe key once', async () => {
    expect(await store.recordMarker('github', 'd-1')).toBe(true);
    expect(await store.recordMarker('github', 'd-1')).toBe(false);
    expect(await store.recordMarker('slack', 'd-1')).toBe(true);
  });
});
