import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationContext } from '../../integrations/integration-module.ts';
import { createLinearApi, linearClient } from '../../integrations/linear/linear-api.ts';
import { LinearApis } from '../../integrations/linear/linear-apis.ts';
import { createLinearReplier } from '../../integrations/linear/linear-replier.ts';
import { createLinearStore } from '../../integrations/linear/linear-store.ts';
import { initialPlan, renderActivities, type LinearThreadState } from '../../integrations/linear/render-activities.ts';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import type { SessionRecord } from '../../src/core/session-record.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const ada = { source: 'linear' as const, id: 'u1', name: 'Ada' };
const alice = { source: 'github' as const, id: '7', name: 'alice', githubLogin: 'alice' };
const stored = (events: SessionEvent[], from = 1): StoredEvent[] =>
  events.map((event, i) => ({ sessionId: 's', seq: from + i, at: new Date(0).toISOString(), event }));
const fresh = (): LinearThreadState => ({ shownSeq: 0, plan: initialPlan(), openCalls: {}, lastPostedAt: 0 });
const session = (over: Partial<SessionRecord> = {}) => ({
  status: 'running' as const,
  result: null,
  error: null,
  repo: 'https://github.com/acme/shop',
  ...over,
});

describe('renderActivities: session events as Linear agent activities', () => {
  it.each([
    ['completed', 'response'],
    ['failed', 'error'],
    ['cancelled', 'response'],
  ] as const)('ends a session that becomes %s with a %s activity, whatever ran before', (to, type) => {
    const events = stored([
      { type: 'status-changed', from: 'queued', to: 'running' },
      { type: 'tool-start', callId: 'c1', name: 'run_shell', input: { command: 'sleep 100' } },
      { type: 'status-changed', from: 'running', to },
    ]);
    const { activities, state } = renderActivities({
      events,
      state: fresh(),
      session: session({ status: to, ...(to === 'failed' && { error: 'the sandbox died' }) }),
      sessionUrl: 'http://p/sessions/s',
    });
    expect(activities.at(-1)!.content.type).toBe(type);
    expect(state.ended).toBe(true);
  });

  it('maps a run to thoughts, actions (noisy ones ephemeral), a select elicitation and the final response', () => {
    const events = stored([
      {
        type: 'session-created',
        repo: 'r',
        prompt: 'p',
        actor: ada,
        thread: { source: 'linear', agentSessionId: 'a', issueId: 'i' },
      },
      { type: 'user-message', actor: ada, text: 'fix it' },
      { type: 'status-changed', from: 'queued', to: 'running' },
      { type: 'workspace-ready', branch: 'patchbay/x', baseBranch: 'main', baseCommit: 'c0' },
      { type: 'tool-start', callId: 'c1', name: 'read_file', input: { path: 'a.ts' } },
      { type: 'tool-end', callId: 'c1', name: 'read_file', isError: false, output: 'contents', durationMs: 1 },
      { type: 'tool-start', callId: 'c2', name: 'run_shell', input: { command: 'npm test\nmore' } },
      { type: 'tool-end', callId: 'c2', name: 'run_shell', isError: true, output: 'Exit code: 1', durationMs: 1 },
      {
        type: 'question-asked',
        questionId: 'q',
        question: 'Which database?',
        choices: ['postgres', 'sqlite'],
        recommended: 'postgres',
      },
      { type: 'user-message', actor: alice, text: 'use postgres\nplease' },
      { type: 'branch-pushed', branch: 'patchbay/x', commit: 'abcdef1234567890', remote: 'origin' },
      {
        type: 'pr-opened',
        url: 'https://github.com/acme/shop/pull/9',
        number: 9,
        branch: 'patchbay/x',
        commit: 'abcdef1234567890',
      },
      { type: 'status-changed', from: 'running', to: 'completed' },
    ]);
    const { activities, state } = renderActivities({
      events,
      state: fresh(),
      session: session({ status: 'completed', result: { summary: 'Fixed.', commit: 'abcdef1234567890' } }),
      sessionUrl: 'http://p/sessions/s',
    });
    expect(activities.map(({ seed: _s, ...a }) => a)).toEqual([
      { content: { type: 'thought', body: 'Working on it.' }, ephemeral: true },
      { content: { type: 'thought', body: 'Workspace ready on branch `patchbay/x` (from `main`).' } },
      { content: { type: 'action', action: 'Read', parameter: 'a.ts', result: 'contents' }, ephemeral: true },
      { content: { type: 'action', action: 'Ran', parameter: 'npm test' }, ephemeral: true },
      { content: { type: 'action', action: 'Ran', parameter: 'npm test', result: 'Failed: Exit code: 1' } },
      {
        content: { type: 'elicitation', body: 'Which database?\n\nI recommend: postgres' },
        options: [{ value: 'postgres' }, { value: 'sqlite' }],
      },
      { content: { type: 'thought', body: 'alice wrote on GitHub:\n\n> use postgres\n> please' } },
      { content: { type: 'thought', body: 'Pushed `abcdef123456` to `patchbay/x`.' } },
      { content: { type: 'thought', body: 'Pull request: https://github.com/acme/shop/pull/9' } },
      {
        content: {
          type: 'response',
          body: 'Fixed.\n\nPull request: https://github.com/acme/shop/pull/9\n\n[Patchbay session](http://p/sessions/s)',
        },
      },
    ]);
    expect(state.plan.every((s) => s.status === 'completed')).toBe(true);
    expect(state.shownSeq).toBe(13);
    // Seeds are unique, so every activity gets its own stable id.
    expect(new Set(activities.map((a) => a.seed)).size).toBe(activities.length);
  });

  it('shows nothing of a stopped run after its final response, and resumes with the next message', () => {
    const first = renderActivities({
      events: stored([{ type: 'status-changed', from: 'running', to: 'cancelled', reason: 'stopped by Ada' }], 10),
      state: fresh(),
      session: session({ status: 'cancelled' }),
      sessionUrl: 'http://p/sessions/s',
    });
    expect(first.activities.map((a) => a.content.type)).toEqual(['response']);
    const late = renderActivities({
      events: stored(
        [
          {
            type: 'tool-end',
            callId: 'c9',
            name: 'run_shell',
            isError: true,
            output: 'Command aborted',
            durationMs: 5,
          },
          { type: 'user-message', actor: alice, text: 'go on' },
          { type: 'status-changed', from: 'cancelled', to: 'queued' },
        ],
        11,
      ),
      state: first.state,
      session: session({ status: 'queued' }),
      sessionUrl: 'http://p/sessions/s',
    });
    expect(late.activities.map((a) => a.content.type)).toEqual(['thought']);
    expect(late.activities[0]!.content).toEqual({ type: 'thought', body: 'alice wrote on GitHub:\n\n> go on' });
  });

  it('adds the harness checks and the verdict to the plan when they run, and a failure cancels what is left', () => {
    const { activities, state } = renderActivities({
      events: stored([
        { type: 'workspace-ready', branch: 'b', baseBranch: 'main', baseCommit: 'c0' },
        {
          type: 'check-finished',
          commit: 'c1',
          phase: 'check',
          name: 'test',
          command: 'npm test',
          outcome: 'failed',
          exitCode: 1,
          durationMs: 9,
          logHead: '',
          logTail: 'FAIL a.test.ts\n1 failed',
        },
        { type: 'verification-finished', commit: 'c1', attempt: 1, outcome: 'failed', summary: 'tests fail' },
        { type: 'status-changed', from: 'running', to: 'failed', reason: 'checks failed' },
      ]),
      state: fresh(),
      session: session({ status: 'failed', error: 'checks failed' }),
      sessionUrl: 'http://p/sessions/s',
    });
    expect(state.plan).toEqual([
      { content: 'Prepare the workspace', status: 'completed' },
      { content: 'Make the changes', status: 'completed' },
      { content: 'Run the checks', status: 'completed' },
      { content: 'Verify the work', status: 'canceled' },
      { content: 'Commit and push the branch', status: 'canceled' },
      { content: 'Open the pull request', status: 'canceled' },
    ]);
    expect(activities.find((a) => a.content.type === 'action')!.content).toEqual({
      type: 'action',
      action: 'Check',
      parameter: 'test: npm test',
      result: 'failed\nFAIL a.test.ts\n1 failed',
    });
    expect(activities.at(-1)!.content).toEqual({
      type: 'error',
      body: 'I could not finish: checks failed\n\n[Patchbay session](http://p/sessions/s)',
    });
  });
});

describe('renderActivities: a session waiting for a worker', () => {
  it('tells where it stands, then that it starts, as thoughts', () => {
    const events = stored([
      { type: 'queue-waiting', ahead: 0, running: 2, since: new Date(0).toISOString() },
      { type: 'queue-started', waitedMs: 5_000, since: new Date(0).toISOString() },
      { type: 'status-changed', from: 'queued', to: 'running' },
    ]);
    const { activities } = renderActivities({
      events,
      state: fresh(),
      session: session(),
      sessionUrl: 'http://p/sessions/s',
    });
    const thoughts = activities
      .filter((a) => a.content.type === 'thought')
      .map((a) => (a.content as { body: string }).body);
    expect(thoughts.slice(0, 2)).toEqual([
      'Queued: you are next (2 running). I will start as soon as a worker is free.',
      'Starting now, after waiting 5 s in the queue.',
    ]);
  });
});

describe('renderActivities: a run waiting for the model service', () => {
  it('tells it once, as a thought', () => {
    const events = stored([
      { type: 'status-changed', from: 'queued', to: 'running' },
      { type: 'model-waiting', code: 'model_rate_limited', message: 'OpenAI rate limit reached', retryInMs: 20_000 },
    ]);
    const { activities } = renderActivities({
      events,
      state: fresh(),
      session: session(),
      sessionUrl: 'http://p/sessions/s',
    });
    const thoughts = activities
      .filter((a) => a.content.type === 'thought')
      .map((a) => (a.content as { body: string }).body);
    expect(thoughts.filter((t) => t.includes('rate limit'))).toEqual([
      "The model service's rate limit is reached for now (OpenAI rate limit reached). I am waiting for it and will carry on where I was; nothing is lost.",
    ]);
  });
});

describe('Linear keep-alive on long steps', () => {
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
    linear.addSession('as-long', 'i1');
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await linear?.close();
    await database?.close();
  });

  it('posts an ephemeral thought before Linear would call the session stale, and not before', async () => {
    const log = pino({ level: 'silent' });
    const store = createLinearStore(database.db);
    await store.saveAgentSession({
      agentSessionId: 'as-long',
      organizationId: linear.organizationId,
      issueId: 'i1',
      issueIdentifier: 'ENG-1',
    });
    const api = createLinearApi({ client: linearClient(linear.apiUrl, { accessToken: linear.accessToken }), log });
    let clock = Date.parse('2026-11-30T10:00:00Z');
    const integration = createLinearReplier({
      store,
      apis: new LinearApis({ tokens: undefined, fallback: api, apiUrl: linear.apiUrl, installUrl: 'http://p', log }),
      context: { publicUrl: 'http://p' } as IntegrationContext,
      log,
      now: () => clock,
    });
    const input = {
      session: { id: 's', updatedAt: new Date(clock).toISOString() } as SessionRecord,
      thread: { source: 'linear' as const, agentSessionId: 'as-long', issueId: 'i1' },
      state: { ...fresh(), lastPostedAt: clock } as unknown,
      signal: AbortSignal.timeout(10_000),
      children: [],
    };
    clock += 10 * 60_000;
    const quiet = await integration.refresh!(input);
    expect(linear.activitiesOf('as-long')).toEqual([]);
    clock += 11 * 60_000;
    const after = await integration.refresh!({ ...input, state: quiet.state });
    expect(linear.activitiesOf('as-long').map((a) => [a.content.type, a.ephemeral, a.content.body])).toEqual([
      ['thought', true, 'Still working (21 min on this step).'],
    ]);
    expect((after.state as LinearThreadState).lastPostedAt).toBe(clock);
    expect(linear.refused).toEqual([]);
  });
});
