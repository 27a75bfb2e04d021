import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { NewChild } from '../../src/core/subtasks.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase, databaseTargets } from '../helpers/test-database.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice' };

/** Two children of the parent, as one spawn call asks for them; `tag` keeps their ids apart per attempt. */
function twoChildren(tag: string): NewChild[] {
  return [1, 2].map((index) => ({
    id: `child-${index}-${tag}`,
    index,
    title: `part ${index}`,
    repo: index === 1 ? 'https://github.com/o/r' : 'https://github.com/o/other',
    prompt: `do part ${index}`,
    branch: `patchbay/parent-sub-${index}`,
    baseBranch: 'main',
  }));
}

describe.each(databaseTargets())('session children on $name PostgreSQL', (target) => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;

  beforeAll(async () => {
    handle = await createTestDatabase(target);
    store = createSessionStore(handle.db);
    await store.create({
      id: 'parent',
      repo: 'https://github.com/o/r',
      prompt: 'p',
      title: 't',
      requester: alice,
      thread: { source: 'web' },
    });
  });
  afterAll(() => handle.close());

  it('creates a call’s children once, with the parent’s step, however often the call is replayed', async () => {
    const spawned = {
      event: { type: 'subtasks-spawned' as const, callId: 'call-1', children: [] },
      dedupeKey: 'subtasks-spawned:call-1',
    };
    const first = await store.spawnChildren('parent', {
      callId: 'call-1',
      requester: alice,
      thread: { source: 'web' },
      children: twoChildren('a'),
      step: { events: [spawned] },
    });
    // A replay after a crash draws new ids: the unique key (parent, call, index) keeps the first children.
    const replay = await store.spawnChildren('parent', {
      callId: 'call-1',
      requester: alice,
      thread: { source: 'web' },
      children: twoChildren('b'),
      step: { events: [spawned] },
    });
    expect(first.created).toEqual(['child-1-a', 'child-2-a']);
    expect(replay.created).toEqual([]);
    expect(replay.children.map((c) => c.sessionId)).toEqual(['child-1-a', 'child-2-a']);
    expect((await store.events('parent', { types: ['subtasks-spawned'] })).length).toBe(1);
    const child = await store.get('child-2-a');
    expect(child).toMatchObject({
      parentId: 'parent',
      status: 'queued',
      branch: 'patchbay/parent-sub-2',
      title: 'part 2',
    });
    expect((await store.events('child-2-a')).map((e) => e.event.type)).toEqual(['session-created', 'user-message']);
    expect((await store.get('parent'))?.parentId).toBeNull();
  });

  it('lists children in order with their commit, pull request and error from their result', async () => {
    await store.transition('child-1-a', 'start');
    await store.transition('child-1-a', 'finish', { patch: { result: { commit: 'abc123', summary: 'done' } } });
    await store.transition('child-2-a', 'start');
    await store.transition('child-2-a', 'fail', { patch: { error: 'checks failed' } });
    expect(await store.children('parent')).toEqual([
      {
        sessionId: 'child-1-a',
        index: 1,
        title: 'part 1',
        repo: 'https://github.com/o/r',
        status: 'completed',
        branch: 'patchbay/parent-sub-1',
        commit: 'abc123',
      },
      {
        sessionId: 'child-2-a',
        index: 2,
        title: 'part 2',
        repo: 'https://github.com/o/other',
        status: 'failed',
        branch: 'patchbay/parent-sub-2',
        error: 'checks failed',
      },
    ]);
    expect(await store.children('parent', 'another-call')).toEqual([]);
  });
});
