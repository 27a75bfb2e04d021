import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationContext } from '../../integrations/integration-module.ts';
import { createLinearApi, linearClient } from '../../integrations/linear/linear-api.ts';
import { LinearApis } from '../../integrations/linear/linear-apis.ts';
import { createLinearReplier } from '../../integrations/linear/linear-replier.ts';
import { createLinearStore } from '../../integrations/linear/linear-store.ts';
import type { StoredEvent } from '../../src/core/events.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import type { SubtaskLine } from '../../src/core/subtasks.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const repo = 'https://github.com/acme/shop';
const child = (index: number, status: SubtaskLine['status']): SubtaskLine => ({
  sessionId: `c${index}`,
  index,
  title: `Part ${index}`,
  repo,
  status,
  branch: `patchbay/x-sub-${index}`,
});

/** The Linear agent session's plan of a session that fanned out: a step per sub-task, kept current between events. */
describe('sub-tasks in the Linear plan, against the fake Linear', () => {
  let linear: FakeLinear;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;

  beforeAll(async () => {
    linear = await startFakeLinear();
    linear.addTeam({
      id: 't1',
      key: 'ENG',
      name: 'Engineering',
      states: [{ id: 's1', name: 'Todo', type: 'unstarted', position: 0 }],
    });
    linear.addIssue({ id: 'i1', identifier: 'ENG-1', title: 'x', description: null, teamId: 't1', stateId: 's1' });
    linear.addSession('as-fan', 'i1');
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await linear?.close();
    await database?.close();
  });

  it('adds the children to the plan when they are spawned, and moves their steps when they move on', async () => {
    const log = pino({ level: 'silent' });
    const store = createLinearStore(database.db);
    await store.saveAgentSession({
      agentSessionId: 'as-fan',
      organizationId: linear.organizationId,
      issueId: 'i1',
      issueIdentifier: 'ENG-1',
    });
    const api = createLinearApi({ client: linearClient(linear.apiUrl, { accessToken: linear.accessToken }), log });
    const session = { id: 's', status: 'running', repo, result: null, error: null } as SessionRecord;
    const replier = createLinearReplier({
      store,
      apis: new LinearApis({ tokens: undefined, fallback: api, apiUrl: linear.apiUrl, installUrl: 'http://p', log }),
      context: { publicUrl: 'http://p', sessions: { get: async () => session } } as unknown as IntegrationContext,
      log,
    });
    const thread = { source: 'linear' as const, agentSessionId: 'as-fan', issueId: 'i1' };
    const signal = AbortSignal.timeout(10_000);
    const events: StoredEvent[] = [
      {
        sessionId: 's',
        seq: 1,
        at: new Date(0).toISOString(),
        event: { type: 'status-changed', from: 'queued', to: 'running' },
      },
    ];
    const plan = () =>
      (linear.sessions.get('as-fan')!.plan as { content: string; status: string }[]).map(
        (s) => `${s.content}: ${s.status}`,
      );

    const first = await replier.reply({
      session,
      thread,
      events,
      state: undefined,
      signal,
      children: [child(1, 'queued'), child(2, 'queued')],
    });
    expect(plan()).toEqual([
      'Prepare the workspace: inProgress',
      'Make the changes: pending',
      'Sub-task 1: Part 1: pending',
      'Sub-task 2: Part 2: pending',
      'Commit and push the branch: pending',
      'Open the pull request: pending',
    ]);
    const updates = linear.sessionUpdates.length;

    // Between the parent's events: its children's changes replace the plan, and only those.
    const moved = await replier.refresh!({
      session,
      thread,
      state: first.state,
      signal,
      children: [child(1, 'running'), child(2, 'failed')],
    });
    expect(plan().slice(2, 4)).toEqual(['Sub-task 1: Part 1: inProgress', 'Sub-task 2: Part 2: failed: canceled']);
    expect(linear.sessionUpdates).toHaveLength(updates + 1);
    await replier.refresh!({
      session,
      thread,
      state: moved.state,
      signal,
      children: [child(1, 'running'), child(2, 'failed')],
    });
    expect(linear.sessionUpdates).toHaveLength(updates + 1);
    expect(
      linear.activities.filter(
        (a) =>
          a.agentSessionId === 'as-fan' &&
          a.content.type === 'thought' &&
          a.ephemeral &&
          String(a.content.body).startsWith('Still'),
      ),
    ).toEqual([]);
    expect(linear.refused).toEqual([]);
  });
});
