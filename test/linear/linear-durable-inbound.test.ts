import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../src/models/scripted-provider.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { installationCreatedEvent, sendWebhook } from '../fakes/fake-github-webhooks.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook } from '../fakes/linear/fake-linear-webhooks.ts';
import { githubSecret, linearSecret, startLinearPatchbay, type LinearPatchbay } from './linear-fixture.ts';

const owner = 'octo-org';
const repo = 'linear-inbox';
const installationId = 93;
const ada = { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' };

describe('Linear deliveries through the durable inbound pipeline', () => {
  let linear: FakeLinear;
  let github: FakeGitHub;
  let upstream: RemoteFixture;
  let app: LinearPatchbay;
  const hook = () => `${app.url}/linear/webhooks`;

  beforeAll(async () => {
    linear = await startFakeLinear();
    github = await startFakeGitHub();
    upstream = await createRemote();
    await github.addRepo(owner, repo, upstream.remote, installationId, {});
    linear.addTeam({
      id: 'team-eng',
      key: 'ENG',
      name: 'Engineering',
      states: [{ id: 'st-todo', name: 'Todo', type: 'unstarted', position: 0 }],
    });
    // Two attempts, a second apart: enough to see the retry and the give-up without waiting long.
    app = await startLinearPatchbay(
      { linear, github },
      createScriptedProvider({ scenario: [{ text: 'Nothing to change.' }] }),
      {},
      { inbound: { retry: { retries: 1, delaySeconds: 1, maxDelaySeconds: 1 } } },
    );
    const installed = installationCreatedEvent(installationId, owner, [{ id: 601, full_name: `${owner}/${repo}` }]);
    expect((await sendWebhook(`${app.url}/github/webhooks`, githubSecret, 'installation', installed)).status).toBe(202);
    await waitFor(
      async () => (await app.database.db.selectFrom('github_installation_repos').selectAll().execute()).length === 1,
      'the installation',
    );
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await linear?.close();
    await github?.close();
    await upstream?.cleanup();
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
