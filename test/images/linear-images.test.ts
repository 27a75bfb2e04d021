import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/fake-anthropic.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeLinear, type FakeLinear } from '../fakes/linear/fake-linear.ts';
import { agentSessionCreated, sendLinearWebhook } from '../fakes/linear/fake-linear-webhooks.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { linearSecret } from '../linear/linear-fixture.ts';
import { solidPng, startImagesApp } from './images-app.ts';

/**
 * A Linear upload reaches the model (issue 24): the issue description links a picture on Linear's
 * upload host (the fake Linear's host here), served to the workspace's token only; the fake
 * Anthropic sees it as an image block. Configured from the environment only.
 */
describe('a Linear upload in the issue description reaches the model', () => {
  let linear: FakeLinear;
  let github: FakeGitHub;
  let anthropic: FakeAnthropic;
  let upstream: RemoteFixture;
  let app: Awaited<ReturnType<typeof startImagesApp>>;

  beforeAll(async () => {
    linear = await startFakeLinear();
    github = await startFakeGitHub();
    upstream = await createRemote();
    await github.addRepo('octo-org', 'demo', upstream.remote, 91);
    linear.addTeam({
      id: 'team-eng',
      key: 'ENG',
      name: 'Engineering',
      states: [{ id: 'st-todo', name: 'Todo', type: 'unstarted', position: 0 }],
    });
    anthropic = await startFakeAnthropic({ script: () => ({ content: [{ type: 'text', text: 'I see it.' }] }) });
    app = await startImagesApp({
      LINEAR_ACCESS_TOKEN: linear.accessToken,
      LINEAR_WEBHOOK_SECRET: linearSecret,
      LINEAR_API_URL: linear.apiUrl,
      GITHUB_APP_ID: String(github.appId),
      GITHUB_APP_PRIVATE_KEY: github.privateKey,
      GITHUB_WEBHOOK_SECRET: 'images-webhook-secret',
      GITHUB_API_URL: github.apiUrl,
      GITHUB_GIT_URL: github.gitUrl,
      MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: anthropic.baseUrl,
    });
  }, 60_000);
  afterAll(async () => {
    await app?.dispose();
    await anthropic?.close();
    await linear?.close();
    await github?.close();
    await upstream?.cleanup();
  });

  it('fetches the upload with the workspace token and hands it to the model', { timeout: 120_000 }, async () => {
    const png = await solidPng(16, 16, { r: 0, g: 128, b: 0 });
    const uploaded = linear.upload(png);
    const issue = linear.addIssue({
      id: 'issue-eng-7',
      identifier: 'ENG-7',
      title: 'The pay button is green',
      description: `It should be red. ${github.gitUrl}/octo-org/demo\n\n![screenshot.png](${uploaded})`,
      teamId: 'team-eng',
      stateId: 'st-todo',
    });
    const created = agentSessionCreated(linear, {
      agentSessionId: 'as-img',
      issue,
      creator: { id: 'u-ada-0001', name: 'Ada', email: 'ada@acme.test' },
    });
    expect((await sendLinearWebhook(`${app.url}/linear/webhooks`, linearSecret, created)).status).toBe(200);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'linear', agentSessionId: 'as-img', issueId: issue.id }),
      'the session',
    );
    await waitForStatus(app, session.id, ['completed', 'failed'], 90_000);
    expect(anthropic.rejections).toEqual([]);
    const first = anthropic.calls[0]!.body.messages[0]!;
    const images = Array.isArray(first.content) ? first.content.filter((b) => b.type === 'image') : [];
    expect(images).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') } },
    ]);
    // The description is quoted as its author's words; its picture is named as theirs too.
    const text = (Array.isArray(first.content) ? first.content : []).flatMap((b) =>
      b.type === 'text' ? [b.text] : [],
    );
    expect(text.join('\n')).toContain(
      "1. screenshot.png: posted by the issue's author in Linear issue ENG-7, not by the person who asked.",
    );
    expect(linear.uploadDownloads).toEqual([{ path: new URL(uploaded).pathname, served: true }]);
    expect(linear.refused).toEqual([]);
  });
});
