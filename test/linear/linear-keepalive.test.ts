import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import { agentSessionCreated, sendLinearWebhook, type LinearUser } from '../fakes/linear/fake-linear-webhooks.ts';
import type { FakeLinear } from '../fakes/linear/fake-linear.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { type LinearFlow, linearSecret, type LinearPatchbay, startLinearFlow } from './linear-fixture.ts';

/**
 * Linear's session rules over a long run, with time scaled so a test can watch it: one second here
 * stands for five minutes. LINEAR_KEEPALIVE_SECONDS=4 is the default 20 minutes, Linear's 30 minutes
 * before a session turns stale are 6 s, and the agent's one command (`sleep 9`, 45 scaled minutes)
 * keeps the run busy for more than 40 scaled minutes without a session event.
 */
const SCALE_MS_PER_MINUTE = 200;
const STALE_MS = 30 * SCALE_MS_PER_MINUTE;
const owner = 'octo-org';
const repo = 'long';
const installationId = 93;
const ada: LinearUser = { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' };

function longRun(messages: readonly ModelMessage[]): ScriptedTurn {
  const turn = messages.filter((m) => m.role === 'assistant').length;
  if (turn === 0) return { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 9' } }] };
  if (turn === 1) return { toolCalls: [{ name: 'write_file', input: { path: 'SLOW.md', content: 'slow\n' } }] };
  return { text: 'Waited, then wrote SLOW.md.' };
}

describe('Linear: a delegated issue over a long run (configured from the environment)', () => {
  let flow: LinearFlow;
  let linear: FakeLinear;
  let github: FakeGitHub;
  let app: LinearPatchbay;

  beforeAll(async () => {
    flow = await startLinearFlow({
      owner,
      repo,
      installationId,
      repoId: 601,
      model: createScriptedProvider({ scenario: longRun }),
      env: { LINEAR_KEEPALIVE_SECONDS: '4' },
    });
    ({ linear, github, app } = flow);
  }, 60_000);
  afterAll(async () => {
    await flow?.dispose();
  });

  it('moves the issue to started once, links the page, never goes 30 (scaled) minutes silent, ends with a response', {
    timeout: 120_000,
  }, async () => {
    const issue = linear.addIssue({
      id: 'issue-eng-40',
      identifier: 'ENG-40',
      title: 'Make the slow job slower',
      description: `Code: ${github.gitUrl}/${owner}/${repo}`,
      teamId: 'team-eng',
      stateId: 'st-todo',
    });
    issue.delegateId = linear.appUserId;
    const created = agentSessionCreated(linear, { agentSessionId: 'as-long', issue, creator: ada });
    expect((await sendLinearWebhook(`${app.url}/linear/webhooks`, linearSecret, created)).status).toBe(200);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'linear', agentSessionId: 'as-long', issueId: issue.id }),
      'the session',
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 90_000);
    expect(done.status).toBe('completed');
    const last = await linear.waitFor(
      () => linear.activitiesOf('as-long').find((a) => a.content.type === 'response'),
      'the response',
    );

    // Moved to the team's first started state, once; and the session links to its page.
    expect(issue.stateId).toBe('st-progress');
    expect(linear.issueUpdates.filter((u) => u.id === issue.id && u.input.stateId)).toHaveLength(1);
    expect(linear.sessions.get('as-long')!.externalUrls).toEqual([
      { label: 'Patchbay session', url: `http://patchbay.test/sessions/${session.id}` },
    ]);

    const activities = linear.activitiesOf('as-long');
    const times = activities.map((a) => a.at);
    // More than 40 scaled minutes from the first activity to the response...
    expect(last.at - times[0]!).toBeGreaterThan(40 * SCALE_MS_PER_MINUTE);
    // ...and never 30 of them without an activity.
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(Math.max(...gaps)).toBeLessThan(STALE_MS);
    // The keep-alive says what the run is doing, not only that it lives.
    const keepAlive = activities.filter((a) => String(a.content.body).startsWith('Still working'));
    expect(keepAlive.length).toBeGreaterThan(0);
    expect(String(keepAlive[0]!.content.body)).toContain('sleep 9');
    // The session ends with its response, and nothing comes after it.
    expect(activities.at(-1)).toBe(last);
    expect(linear.refused).toEqual([]);
  });
});
