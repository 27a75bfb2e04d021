import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Patchbay } from '../../src/main.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, blockAction, envelope, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackGitHubPatchbay, type SlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';

/**
 * Slack in, a pull request out, configured the way a user configures Patchbay: environment only,
 * through the composition root (`loadConfig` → `startPatchbay` with `buildIntegrations`, as
 * `patchbay serve` does). Slack's Web API and GitHub (REST, App auth, git) are loopback fakes;
 * the repositories are two different ones, so a mix-up between them shows.
 */
describe('Slack → GitHub, configured from the environment', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  const upstreams: RemoteFixture[] = [];
  let patchbayApp: SlackGitHubPatchbay;
  let app: Patchbay;
  let host: string;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    for (const name of ['api', 'web']) {
      const upstream = await createRemote();
      upstreams.push(upstream);
      await github.addRepo(owner, name, upstream.remote, 77);
    }
    host = new URL(github.gitUrl).host;
    // The model writes a file, then finishes.
    patchbayApp = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      turns: [
        { toolCalls: [{ name: 'write_file', input: { path: 'CHANGES.md', content: 'changed by patchbay\n' } }] },
        { text: 'Added CHANGES.md.' },
      ],
    });
    app = patchbayApp.app;
  }, 120_000);
  afterAll(async () => {
    await patchbayApp?.close();
    await github?.close();
    await slack?.close();
    for (const upstream of upstreams) await upstream.cleanup();
  });

  const post = (body: string, headers: Record<string, string>) =>
    fetch(`${app.url}/slack/events`, { method: 'POST', headers, body });
  const postEvent = (payload: unknown) => {
    const signed = signBody(SIGNING_SECRET, JSON.stringify(payload));
    return post(signed.body, signed.headers);
  };
  const postAction = (payload: unknown) => {
    const signed = signBody(SIGNING_SECRET, new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), {
      contentType: 'application/x-www-form-urlencoded',
    });
    return post(signed.body, signed.headers);
  };
  const sessionFor = (threadTs: string) =>
    app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs });

  /** The session ends with a PR on `repo`, whose link is posted in the thread. */
  const expectPullRequestIn = async (threadTs: string, repo: string) => {
    const session = await waitFor(() => sessionFor(threadTs), 'the session');
    expect(session.repo).toBe(`${github.gitUrl}/${owner}/${repo}`);
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    const pull = github.pulls.find((p) => p.head === done.branch);
    expect(pull?.repo).toBe(`${owner}/${repo}`);
    const link = `${github.gitUrl}/${owner}/${repo}/pull/${pull!.number}`;
    expect(done.result?.prUrl).toBe(link);
    await waitFor(
      async () =>
        slack
          .thread(CHANNEL, threadTs)
          .some((m) => m.text.includes(link) || JSON.stringify(m.blocks ?? []).includes(link)),
      'the PR link in the thread',
      90_000,
    );
  };

  it(`opens the PR on the repository a mention names as https://<GITHUB_GIT_URL host>/owner/repo and posts its link in the thread`, {
    timeout: 180_000,
  }, async () => {
    const mention = appMention({ user: 'U0ALICE01', text: `add a changes file to <https://${host}/${owner}/web>` });
    expect((await postEvent(envelope(mention))).status).toBe(200);
    await expectPullRequestIn(mention.ts, 'web');
    expect(github.refused).toEqual([]);
  });

  it('starts the repository whose button was clicked, not the recommended one', { timeout: 180_000 }, async () => {
    const mention = appMention({
      user: 'U0ALICE01',
      text: `tidy up <https://${host}/${owner}/web> or <https://${host}/${owner}/api>`,
    });
    await postEvent(envelope(mention));
    const list = await waitFor(
      async () => slack.thread(CHANNEL, mention.ts).find((m) => m.text.includes('names 2 repositories')),
      'the candidate list',
    );
    expect(list.text).toMatch(/I recommend \*octo-org\/web\*/);
    const buttons = (
      list.blocks as { type: string; elements?: { action_id: string; value: string; text: { text: string } }[] }[]
    ).find((b) => b.type === 'actions')!.elements!;
    const api = buttons.find((b) => b.text.text === `${owner}/api`)!;
    expect(
      (
        await postAction(
          blockAction({
            user: 'U0ALICE01',
            actionId: api.action_id,
            value: api.value,
            messageTs: list.ts,
            threadTs: mention.ts,
          }),
        )
      ).status,
    ).toBe(200);
    await expectPullRequestIn(mention.ts, 'api');
    expect(github.refused).toEqual([]);
  });

  it('takes the pull request GitHub opened when the answer to opening it was lost, instead of failing on "already exists"', {
    timeout: 180_000,
  }, async () => {
    github.dropAfterAccept('pulls/create');
    const mention = appMention({ user: 'U0ALICE01', text: `add a changes file to <https://${host}/${owner}/web>` });
    expect((await postEvent(envelope(mention))).status).toBe(200);
    await expectPullRequestIn(mention.ts, 'web');
    const session = await sessionFor(mention.ts);
    expect(github.pulls.filter((p) => p.head === session!.branch)).toHaveLength(1);
    // Octokit's retry of the POST whose answer was lost, and nothing else.
    expect(github.refused.map((r) => r.message)).toEqual([
      `A pull request already exists for ${owner}:${session!.branch}.`,
    ]);
  });
});
