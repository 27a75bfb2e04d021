import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import { createSessionFamily } from '../../src/sessions/store/session-family-reader.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice' };
const api = 'https://github.com/acme/api';
const client = 'https://github.com/acme/client';

/** A family read from the real store: the parent first, its children in order, each with its PR. */
describe('the session family from the store', () => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;

  beforeAll(async () => {
    handle = await createTestDatabase();
    store = createSessionStore(handle.db);
    for (const id of ['parent', 'alone'])
      await store.create({ id, repo: api, prompt: 'p', title: 't', requester: alice, thread: { source: 'web' } });
    await store.spawnChildren('parent', {
      callId: 'call-1',
      requester: alice,
      children: [1, 2].map((index) => ({
        id: `child-${index}`,
        index,
        title: `part ${index}`,
        repo: index === 1 ? api : client,
        prompt: `do part ${index}`,
        branch: `patchbay/parent-sub-${index}`,
      })),
      thread: { source: 'web' },
      step: { events: [{ event: { type: 'subtasks-spawned', callId: 'call-1', children: [] } }] },
    });
    const finish = async (id: string, prUrl: string) => {
      await store.transition(id, 'start');
      await store.transition(id, 'finish', { patch: { result: { prUrl } } });
    };
    await finish('child-2', `${client}/pull/7`);
    await finish('parent', `${api}/pull/12`);
  });
  afterAll(() => handle.close());

  it('is the same family seen from the parent and from a child, with the pull requests they opened', async () => {
    const family = createSessionFamily(store);
    const expected = [
      { sessionId: 'parent', repo: api, prUrl: `${api}/pull/12` },
      { sessionId: 'child-1', repo: api },
      { sessionId: 'child-2', repo: client, prUrl: `${client}/pull/7` },
    ];

    expect(await family.family('parent')).toEqual(expected);
    expect(await family.family('child-2')).toEqual(expected);
    expect(await family.family('alone')).toEqual([{ sessionId: 'alone', repo: api }]);
    expect(await family.family('nobody')).toEqual([]);
  });
});
