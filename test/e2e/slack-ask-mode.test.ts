import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Patchbay } from '../../src/main.ts';
import { ANSWER_ONLY } from '../../src/harness/answer-mode.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, message, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackGitHubPatchbay, type SlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';

const run = promisify(execFile);
const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';

/**
 * A question in Slack gets an answer, not a pull request: configured from the environment only
 * (loadConfig → startPatchbay with buildIntegrations, as `patchbay serve`), with Slack's Web API
 * and GitHub (REST, App auth, git) as loopback fakes and a scripted model that tries to write a
 * file while it answers. "fix it" in the same thread then ends with a pull request.
 */
describe('a question in Slack, then "fix it"', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let upstream: RemoteFixture;
  let patchbayApp: SlackGitHubPatchbay;
  let app: Patchbay;
  let host: string;
  let baseCommit: string;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    baseCommit = await upstream.pushCommit('retry.ts', 'export const retryPolicy = {\n  attempts: 3,\n};\n', 'retry');
    await github.addRepo(owner, 'shop', upstream.remote, 77);
    host = new URL(github.gitUrl).host;
    patchbayApp = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      turns: [
        // The question: the agent reads, tries to change a file (refused), then answers.
        { toolCalls: [{ name: 'search', input: { pattern: 'attempts' } }] },
        { toolCalls: [{ name: 'write_file', input: { path: 'retry.ts', content: 'changed\n' } }] },
        { text: 'The retry policy is set in `retry.ts:2` (3 attempts); `missing.ts:1` is not a file.' },
        // "fix it": the change, then the summary.
        {
          toolCalls: [
            {
              name: 'write_file',
              input: { path: 'retry.ts', content: 'export const retryPolicy = {\n  attempts: 5,\n};\n' },
            },
          ],
        },
        { text: 'Raised the retry attempts to 5.' },
      ],
    });
    app = patchbayApp.app;
  }, 120_000);
  afterAll(async () => {
    await patchbayApp?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  const postEvent = (payload: unknown) => {
    const signed = signBody(SIGNING_SECRET, JSON.stringify(payload));
    return fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body });
  };
  const heads = async () => (await run('git', ['ls-remote', '--heads', upstream.remote])).stdout.trim().split('\n');

  it('answers in the thread with file links and pushes nothing; "fix it" ends with a pull request', {
    timeout: 240_000,
  }, async () => {
    const mention = appMention({
      user: 'U0ALICE01',
      text: `where is the retry policy set in <https://${host}/${owner}/shop>?`,
    });
    expect((await postEvent(envelope(mention))).status).toBe(200);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs: mention.ts }),
      'the session',
    );
    const answered = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(answered.status).toBe('completed');
    expect(answered.result?.answered).toBe(true);

    // The thread: which mode and why, then the answer with a link at the commit and lines read.
    const link = `${github.gitUrl}/${owner}/shop/blob/${baseCommit}/retry.ts#L2`;
    const reply = await waitFor(
      async () => slack.thread(CHANNEL, mention.ts).find((m) => m.text.includes(link)),
      'the answer with its file link',
      60_000,
    );
    // Streamed where Slack offers its agent surface (Markdown), posted otherwise (mrkdwn).
    expect([`[retry.ts:2](${link})`, `<${link}|retry.ts:2>`].some((form) => reply.text.includes(form))).toBe(true);
    expect(reply.text).toContain('`missing.ts:1`');
    expect(slack.thread(CHANNEL, mention.ts).some((m) => m.text.includes('Answering without changing anything'))).toBe(
      true,
    );
    // Read-only: the write was refused, nothing was pushed, no pull request.
    const events = await app.store.events(session.id);
    const write = events.find((e) => e.event.type === 'tool-end' && e.event.name === 'write_file')?.event;
    expect(write).toMatchObject({ isError: true, output: ANSWER_ONLY });
    expect(events.some((e) => e.event.type === 'branch-pushed' || e.event.type === 'pr-opened')).toBe(false);
    expect(await heads()).toHaveLength(1);
    expect(github.pulls).toEqual([]);

    // "fix it" in the same thread: the same session changes the code and opens a pull request.
    const fix = message({ user: 'U0ALICE01', text: 'fix it', threadTs: mention.ts });
    expect((await postEvent(envelope(fix))).status).toBe(200);
    await waitFor(async () => github.pulls.length > 0 || undefined, 'the pull request', 120_000);
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');
    const pull = github.pulls.find((p) => p.head === done.branch);
    expect(pull?.repo).toBe(`${owner}/shop`);
    const prLink = `${github.gitUrl}/${owner}/shop/pull/${pull!.number}`;
    await waitFor(
      async () => slack.thread(CHANNEL, mention.ts).some((m) => m.text.includes(prLink)),
      'the PR link in the thread',
      60_000,
    );
    const modes = (await app.store.events(session.id)).flatMap((e) =>
      e.event.type === 'mode-chosen' ? [e.event.mode] : [],
    );
    expect(modes).toEqual(['ask', 'do']);
    expect(github.refused).toEqual([]);
    expect(slack.refused).toEqual([]);
  });
});
