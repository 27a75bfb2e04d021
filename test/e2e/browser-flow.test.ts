import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Patchbay } from '../../src/main.ts';
import { pngSize } from '../../src/agent/png-size.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { pidsWithMarker } from '../sandbox/sandbox-test-helpers.ts';
import { counterApp, walkTheFlow } from '../fixtures/counter-app.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackGitHubPatchbay, type SlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const PUBLIC_URL = 'http://patchbay.test';
const owner = 'octo-org';
const PORT = 8171;
const URL = `http://127.0.0.1:${PORT}/`;

/**
 * The browser as a tool, end to end through the composition root from the environment alone: the
 * scripted agent starts the app's dev server once as a background process, logs in with
 * browser_type, clicks the counter three times, reads 3 from browser_snapshot, takes a picture,
 * fixes the greeting the page showed wrong, walks the flow again in the same browser, and the pull
 * request carries the first and last pictures. After the run no server or browser process is left.
 */
describe('the browser tools over a dev server that keeps running', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let upstream: RemoteFixture;
  let patchbayApp: SlackGitHubPatchbay;
  let patchbay: Patchbay;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await upstream.pushCommit('index.html', counterApp('user'), 'A login form and a counter');
    await github.addRepo(owner, 'counter', upstream.remote, 79);
    const server = `exec python3 -m http.server ${PORT} --bind 127.0.0.1`;
    patchbayApp = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      turns: [
        { toolCalls: [{ name: 'process_start', input: { command: server, port: PORT } }] },
        ...walkTheFlow(URL),
        { toolCalls: [{ name: 'write_file', input: { path: 'index.html', content: counterApp('username') } }] },
        ...walkTheFlow(URL),
        { text: 'The greeting now names the user.' },
      ],
    });
    patchbay = patchbayApp.app;
  }, 120_000);
  afterAll(async () => {
    await patchbayApp?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  it('logs in, counts to three, fixes what the page showed, and the PR carries before and after', {
    timeout: 240_000,
  }, async () => {
    const host = new globalThis.URL(github.gitUrl).host;
    const mention = appMention({ user: 'U0ALICE01', text: `fix the greeting in <https://${host}/${owner}/counter>` });
    const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(mention)));
    expect((await fetch(`${patchbay.url}/slack/events`, { method: 'POST', ...signed })).status).toBe(200);
    const session = await waitFor(
      () =>
        patchbay.store.findByThread({ source: 'slack', teamId: 'T123ABC456', channel: CHANNEL, threadTs: mention.ts }),
      'the session',
    );
    const done = await waitForStatus(patchbay, session.id, ['completed', 'failed', 'cancelled'], 180_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');

    const ends = (await patchbay.store.events(session.id, { types: ['tool-start', 'tool-end'] })).map((e) => e.event);
    const outputs = (name: string) =>
      ends.flatMap((e) => (e.type === 'tool-end' && e.name === name ? [{ output: e.output, isError: e.isError }] : []));
    expect(ends.filter((e) => e.type === 'tool-start' && e.name === 'process_start')).toHaveLength(1);
    expect(outputs('process_start')[0]).toMatchObject({ isError: false });
    expect(outputs('process_start')[0]?.output).toContain(`It answers on ${URL}`);
    for (const name of ['browser_open', 'browser_type', 'browser_click', 'browser_snapshot', 'browser_screenshot'])
      expect(outputs(name).filter((o) => o.isError)).toEqual([]);
    const snapshots = outputs('browser_snapshot');
    // Before the fix the page greets nobody; after it, alice; both times the counter reads 3.
    expect(snapshots[0]?.output).toContain('heading "Welcome, undefined"');
    expect(snapshots[0]?.output).toContain('status "3"');
    expect(snapshots[1]?.output).toContain('heading "Welcome, alice"');
    expect(snapshots[1]?.output).toContain('status "3"');
    expect(outputs('browser_type')[1]?.output).toContain('button "Add one" [ref=e4]');

    const pull = github.pulls.find((p) => p.head === done.branch);
    const links = [
      ...(pull?.body ?? '').matchAll(/!\[(before|after)\]\((http:\/\/patchbay\.test\/artifacts\/[^)\s]+)\)/g),
    ];
    expect(links.map((m) => m[1])).toEqual(['before', 'after']);
    expect(pull?.body).toContain(`\`${URL}\``);
    const [before, after] = await Promise.all(
      links.map(async ([, , link]) => {
        const res = await fetch(link!.replace(PUBLIC_URL, patchbay.url ?? ''));
        expect(res.status).toBe(200);
        return Buffer.from(await res.arrayBuffer());
      }),
    );
    expect(pngSize(before!)).toMatchObject({ width: 1280, height: 800 });
    expect(pngSize(after!)).toMatchObject({ width: 1280, height: 800 });
    expect(before!.equals(after!)).toBe(false);

    // The run's end stopped the dev server and the browser: nothing of theirs is left on this machine.
    const left = async () => [
      ...(await pidsWithMarker(`http.server ${PORT}`)),
      ...(await pidsWithMarker(`patchbay-browser-${session.id}`)),
    ];
    await waitFor(async () => ((await left()).length === 0 ? true : undefined), 'no server or browser left', 15_000);
    expect(slack.refused).toEqual([]);
    expect(github.refused).toEqual([]);
  });
});
