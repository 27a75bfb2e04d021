import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core/actor.ts';
import type { GateDeps } from '../../src/harness/gates/gate-deps.ts';
import type { Route } from '../../src/harness/route-task.ts';
import { budgetLimits } from '../../src/harness/session-budget.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { createSubtaskSessions } from '../../src/sessions/subtasks/subtask-sessions.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const alice: Actor = { source: 'web', id: 'alice', name: 'Alice' };
const route: Route = { taskClass: 'small-fix', reason: 'test', costShare: 1, timeShare: 1 };
/** One model call of an unpriced model: 1M output tokens at the unknown-model price, $75. */
const usage = (turn: number) => ({
  event: {
    type: 'usage' as const,
    turn,
    model: 'some-unpriced-model',
    inputTokens: 0,
    outputTokens: 1_000_000,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
  },
});

describe('the parent budget covers its sub-tasks', () => {
  let handle: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;

  beforeAll(async () => {
    handle = await createTestDatabase();
    store = createSessionStore(handle.db);
  });
  afterAll(() => handle.close());

  it("counts the children's spending against the parent and the family's against a child", async () => {
    await store.create({ id: 'p', repo: 'r', prompt: 'p', title: 't', requester: alice, thread: { source: 'web' } });
    const subtasks = createSubtaskSessions({ store, queue: { enqueue: async () => undefined } });
    await subtasks.spawn('p', {
      callId: 'c',
      events: [],
      children: [1, 2].map((index) => ({
        id: `c${index}`,
        index,
        title: `t${index}`,
        repo: 'r',
        prompt: 'x',
        branch: `b-${index}`,
      })),
    });
    await store.append('p', [usage(0)]);
    await store.append('c1', [usage(0)]);
    await store.append('c2', [usage(0), usage(1)]);
    const deps = {
      store,
      gates: { maxCostUsd: 500, maxMinutes: 60 } as GateDeps,
      subtasks: { store: subtasks, repoBases: [] },
    };
    expect((await budgetLimits('p', deps, route, Date.now())).maxCostUsd).toBeCloseTo(500 - 4 * 75);
    expect((await budgetLimits('c1', deps, route, Date.now())).maxCostUsd).toBeCloseTo(500 - 4 * 75);
    expect((await budgetLimits('p', { store, gates: deps.gates }, route, Date.now())).maxCostUsd).toBeCloseTo(425);
  });
});
