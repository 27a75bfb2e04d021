import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { waitFor } from '../helpers/wait-for.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import type { FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook } from '../fakes/linear/fake-linear-webhooks.ts';
import { engineering, type LinearFlow, linearSecret, type LinearPatchbay, startLinearFlow } from './linear-fixture.ts';

const owner = 'octo-org';
const repo = 'linear-inbox';
const installationId = 93;
const ada = { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' };

describe('Linear deliveries through the durable inbound pipeline', () => {
  let flow: LinearFlow;
  let linear: FakeLinear;
  let github: FakeGitHub;
  let app: LinearPatchbay;
  const hook = () => `${app.url}/linear/webhooks`;

  beforeAll(async () => {
    flow = await startLinearFlow({
      owner,
      repo,
      installationId,
      repoId: 601,
      model: createScriptedProvider({ scenario: [{ text: 'Nothing to change.' }] }),
      // Two attempts, a second apart: enough to see the retry and the give-up without waiting long.
      options: { inbound: { retry: { retries: 1, delaySeconds: 1, maxDelaySeconds: 1 } } },
      team: { ...engineering, states: [{ id: 'st-todo', name: 'Todo', type: 'unstarted', position: 0 }] },
      writers: {},
    });
    ({ linear, github, app } = flow);
  }, 60_000);
  afterAll(async () => {
    await flow?.dispose();
  });

  it('stores a delegation under its meaning: a redelivery with a new Linear-Delivery is acknowledged and dropped', async () => {
    const issue = linear.addIssue({
      id: 'issue-eng-1',
      identifier: 'ENG-1',
      title: 'Tidy the README',
      description: `In ${github.gitUrl}/${owner}/${repo}`,
      teamId: 'team-eng',
      stateId: 'st-todo',
    });
    const payload = agentSessionCreated(linear, { agentSessionId: 'as-dup', issue, creator: ada });
    const first = await sendLinearWebhook(hook(), linearSecret, payload);
    expect(JSON.parse(first.text)).toEqual({ ok: true });
    const again = await sendLinearWebhook(hook(), linearSecret, payload);
    expect(JSON.parse(again.text)).toEqual({ ok: true, duplicate: true });
    await waitFor(
      () => app.store.findByThread({ source: 'linear', agentSessionId: 'as-dup', issueId: issue.id }),
      'the session',
    );
    const stored = (await app.inbound.list()).filter((d) => d.source === 'linear');
    expect(stored).toEqual([
      expect.objectContaining({ dedupeKey: 'agent-session:as-dup:created', kind: 'AgentSessionEvent' }),
    ]);
    await waitFor(
      async () => (await app.inbound.list()).find((d) => d.source === 'linear')?.status === 'done',
      'the delivery done',
    );
    expect(linear.refused).toEqual([]);
  }, 60_000);

  it('retries a delivery that fails, and after its last attempt posts an error activity and lists it at GET /api/deliveries?failed=true', async () => {
    // Linear refuses to link the session page from the agent session, on every attempt.
    linear.fail('updateAgentSession', 'Argument Validation Error: externalUrls is not allowed for this session');
    try {
      const issue = linear.addIssue({
        id: 'issue-eng-2',
        identifier: 'ENG-2',
        title: 'Fix the typo',
        description: `In ${github.gitUrl}/${owner}/${repo}`,
        teamId: 'team-eng',
        stateId: 'st-todo',
      });
      const payload = agentSessionCreated(linear, { agentSessionId: 'as-doomed', issue, creator: ada });
      const sent = await sendLinearWebhook(hook(), linearSecret, payload);
      expect(sent.status).toBe(200);
      const error = await linear.waitFor(
        () => linear.activitiesOf('as-doomed').find((a) => a.content.type === 'error'),
        'the error activity',
      );
      expect(error.content.body).toMatch(
        /^I could not process this request: Linear agentSessionUpdate failed .*externalUrls is not allowed/,
      );
      const response = await fetch(`${app.url}/api/deliveries?failed=true`);
      expect(response.status).toBe(200);
      const failed = (await response.json()) as {
        source: string;
        dedupeKey: string;
        status: string;
        attempts: number;
        error: string;
      }[];
      expect(failed).toEqual([
        expect.objectContaining({
          source: 'linear',
          dedupeKey: 'agent-session:as-doomed:created',
          status: 'failed',
          attempts: 2,
        }),
      ]);
      expect(failed[0]!.error).toContain('externalUrls is not allowed');
      // The retry re-posted nothing: activities carry ids derived from the delivery.
      expect(
        linear
          .activitiesOf('as-doomed')
          .filter((a) => a.content.type === 'thought' && String(a.content.body).startsWith('Looking at')),
      ).toHaveLength(1);
      // The session service took the start once; the retry found it a duplicate.
      expect((await app.store.list()).filter((s) => s.prompt.includes('ENG-2'))).toHaveLength(1);
      // What Linear refused: the link, each attempt (and the run's plan updates), and the retry's two
      // thoughts, which it already had under the same ids.
      const refused = linear.refused.filter((r) => r.operation !== 'updateAgentSession');
      expect(refused.map((r) => r.message)).toEqual([
        expect.stringMatching(/^Argument Validation Error: id /),
        expect.stringMatching(/^Argument Validation Error: id /),
      ]);
      expect(linear.refused.filter((r) => r.operation === 'updateAgentSession').length).toBeGreaterThanOrEqual(2);
    } finally {
      linear.restore('updateAgentSession');
      linear.refused.length = 0;
    }
  }, 60_000);
});
