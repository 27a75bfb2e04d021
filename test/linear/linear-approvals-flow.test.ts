import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import type { FakeGitHub } from '../fakes/fake-github.ts';
import type { FakeLinear } from '../fakes/linear/fake-linear.ts';
import {
  agentSessionCreated,
  agentSessionPrompted,
  sendLinearWebhook,
  type LinearUser,
} from '../fakes/linear/fake-linear-webhooks.ts';
import { type LinearFlow, linearSecret, type LinearPatchbay, startLinearFlow } from './linear-fixture.ts';

const PUBLISH = 'echo once >> published.txt; npm publish >/dev/null 2>&1; true';
const LOOK = 'cat published.txt 2>/dev/null || echo absent';

function publishScenario(messages: readonly ModelMessage[]): ScriptedTurn {
  const last = messages.at(-1);
  const content = last?.role === 'tool' ? last.content : '';
  if (last?.role !== 'tool') return { toolCalls: [{ name: 'run_shell', input: { command: PUBLISH } }] };
  if (content.includes('once')) return { text: 'Published once.' };
  if (content.includes('absent')) return { toolCalls: [{ name: 'run_shell', input: { command: PUBLISH } }] };
  return { toolCalls: [{ name: 'run_shell', input: { command: LOOK } }] };
}

const owner = 'octo-org';
const repo = 'released';
const installationId = 93;
const ada: LinearUser = { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' };

describe('approvals decided in a Linear elicitation (fake Linear and GitHub, real Patchbay, APPROVALS=on)', () => {
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
      repoId: 502,
      model: createScriptedProvider({ scenario: publishScenario }),
      // Publishing is refused unless an operator's rule allows it (issue 36): this one asks.
      env: { APPROVALS: 'on', APPROVAL_RULES: 'publish=ask' },
    });
    ({ linear, github, app } = flow);
  }, 60_000);
  afterAll(async () => {
    await flow?.dispose();
  });

  it('asks with Approve once / Deny; `deny <reason>` reaches the model; choosing Approve once runs it once', {
    timeout: 120_000,
  }, async () => {
    const issue = linear.addIssue({
      id: 'issue-eng-9',
      identifier: 'ENG-9',
      title: 'Publish the package',
      description: `Release it. Code: ${github.gitUrl}/${owner}/${repo}`,
      teamId: 'team-eng',
      stateId: 'st-todo',
    });
    issue.delegateId = linear.appUserId;
    const created = agentSessionCreated(linear, { agentSessionId: 'as-ap', issue, creator: ada });
    expect((await sendLinearWebhook(hook(), linearSecret, created)).status).toBe(200);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'linear', agentSessionId: 'as-ap', issueId: issue.id }),
      'the session',
    );
    const elicitations = () =>
      linear
        .activitiesOf('as-ap')
        .filter((a) => a.content.type === 'elicitation' && String(a.content.body).includes('Approval needed'));
    const first = await linear.waitFor(() => elicitations()[0], 'the approval elicitation');
    expect(String(first.content.body)).toContain(PUBLISH);
    await waitForStatus(app, session.id, ['waiting']);

    const prompt = (body: string, n: number) =>
      sendLinearWebhook(
        hook(),
        linearSecret,
        agentSessionPrompted(linear, { agentSessionId: 'as-ap', issue, user: ada, body, activityId: `act-${n}` }),
      );
    expect((await prompt('deny releases go out from CI', 1)).status).toBe(200);
    await linear.waitFor(() => elicitations()[1], 'the second request');
    await waitForStatus(app, session.id, ['waiting']);
    expect((await prompt('Approve once', 2)).status).toBe(200);

    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 90_000);
    expect(done.status).toBe('completed');
    const outputs = (await app.store.events(session.id, { types: ['tool-end'] })).map((e) =>
      e.event.type === 'tool-end' ? e.event.output : '',
    );
    expect(outputs).toEqual([
      'Not approved: Ada denied it: releases go out from CI. The command did not run.',
      'Exit code: 0\nstdout:\nabsent\n',
      'Exit code: 0',
      'Exit code: 0\nstdout:\nonce\n',
    ]);
    const decided = (await app.store.events(session.id, { types: ['approval-decided'] })).map((e) => e.event);
    expect(decided).toMatchObject([
      { decision: 'denied', surface: 'linear', reason: 'releases go out from CI' },
      { decision: 'approved', surface: 'linear' },
    ]);
  });
});
