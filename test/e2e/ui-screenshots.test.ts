import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Patchbay } from '../../src/main.ts';
import { decodePng } from '../agent/png-pixels.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, signBody } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { passingVerdict, scriptedVerifier } from '../helpers/scripted-verifier.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackGitHubPatchbay, type SlackGitHubPatchbay } from '../helpers/slack-github-patchbay.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const PUBLIC_URL = 'http://patchbay.test';
const owner = 'octo-org';
const PORT = 8163;

const INDEX = `<!doctype html><html><head><link rel="stylesheet" href="style.css"></head>
<body><button class="save">Save</button></body></html>\n`;
const style = (colour: string) =>
  `body { margin: 0; background: #fff; }\n.save { position: absolute; left: 0; top: 0; width: 240px; height: 90px; border: 0; background: ${colour}; }\n`;

/**
 * A UI change from Slack, end to end through the composition root: a small web app (index.html
 * and a button styled in style.css) whose button the scripted agent turns from red to blue. The
 * harness takes the page before (base commit) and after (the pushed commit): the pull request
 * body links both through signed artifact URLs, which serve PNGs that differ where the button is,
 * and the Slack thread gets the two pictures through files.uploadV2.
 */
describe('before/after screenshots of a UI change', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let upstream: RemoteFixture;
  let patchbayApp: SlackGitHubPatchbay;
  let app: Patchbay;
  const verifier = scriptedVerifier(passingVerdict);

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await upstream.pushCommit('index.html', INDEX, 'A page with a save button');
    await upstream.pushCommit('style.css', style('#ff0000'), 'A red save button');
    await github.addRepo(owner, 'site', upstream.remote, 78);
    const server = `exec python3 -m http.server ${PORT} --bind 127.0.0.1`;
    patchbayApp = await startSlackGitHubPatchbay({
      slack,
      github,
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      turns: [
        { toolCalls: [{ name: 'write_file', input: { path: 'style.css', content: style('#0000ff') } }] },
        { toolCalls: [{ name: 'screenshot', input: { url: `http://127.0.0.1:${PORT}/`, server } }] },
        { text: 'Made the save button blue.' },
      ],
      verifierModel: verifier,
    });
    app = patchbayApp.app;
  }, 120_000);
  afterAll(async () => {
    await patchbayApp?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  /** A link on PUBLIC_URL, fetched from the running server. */
  const get = (link: string) => fetch(link.replace(PUBLIC_URL, app.url ?? ''));

  it('links before and after in the PR body, serves them through signed URLs, and uploads them to the thread', {
    timeout: 240_000,
  }, async () => {
    const host = new URL(github.gitUrl).host;
    const mention = appMention({
      user: 'U0ALICE01',
      text: `make the save button blue in <https://${host}/${owner}/site>`,
    });
    const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(mention)));
    expect((await fetch(`${app.url}/slack/events`, { method: 'POST', ...signed })).status).toBe(200);
    const session = await waitFor(
      () => app.store.findByThread({ source: 'slack', teamId: 'T123ABC456', channel: CHANNEL, threadTs: mention.ts }),
      'the session',
    );
    const done = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 180_000);
    expect(done.error).toBeNull();
    expect(done.status).toBe('completed');

    const pull = github.pulls.find((p) => p.head === done.branch);
    expect(pull?.body).toContain('## Screenshots');
    const links = [
      ...(pull?.body ?? '').matchAll(/!\[(before|after)\]\((http:\/\/patchbay\.test\/artifacts\/[^)\s]+)\)/g),
    ];
    expect(links.map((m) => m[1])).toEqual(['before', 'after']);
    const [before, after] = await Promise.all(
      links.map(async ([, , link]) => {
        const res = await get(link!);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('image/png');
        return Buffer.from(await res.arrayBuffer());
      }),
    );
    // Where the button is: red before, blue after; the page around it is white in both.
    const [rb, gb, bb] = decodePng(before!).at(20, 40);
    const [ra, ga, ba] = decodePng(after!).at(20, 40);
    expect([rb > 220, gb < 40, bb < 40]).toEqual([true, true, true]);
    expect([ra < 40, ga < 40, ba > 220]).toEqual([true, true, true]);
    expect(decodePng(before!).at(600, 400)).toEqual(decodePng(after!).at(600, 400));

    // Refused: the link without its signature, with a wrong one, or with a later expiry.
    const link = new URL(links[0]![2]!);
    const bare = `${PUBLIC_URL}${link.pathname}`;
    const wrong = `${bare}?sig=${'A'.repeat(43)}&exp=${link.searchParams.get('exp')}`;
    const later = `${bare}?sig=${link.searchParams.get('sig')}&exp=${Number(link.searchParams.get('exp')) + 60}`;
    for (const refused of [bare, wrong, later]) expect((await get(refused)).status).toBe(404);

    // The independent verifier judged the change with the same two pictures beside the diff (issue 35).
    const judged = verifier.requests.at(-1)?.messages[0];
    const shown = judged?.role === 'user' ? (judged.images ?? []) : [];
    expect(shown.map((i) => i.name)).toEqual([
      `before: screenshot of http://127.0.0.1:${PORT}/`,
      `after: screenshot of http://127.0.0.1:${PORT}/`,
    ]);
    expect(shown.map((i) => Buffer.from(i.data, 'base64').equals(i === shown[0] ? before! : after!))).toEqual([
      true,
      true,
    ]);
    expect(judged?.content).toContain('# Screenshots');

    const uploaded = await waitFor(
      async () => {
        const files = slack.files.filter((f) => f.threadTs === mention.ts && f.channel === CHANNEL);
        return files.length === 2 ? files : undefined;
      },
      'the two pictures in the thread',
      60_000,
    );
    expect(uploaded.map((f) => f.title)).toEqual([
      `before: http://127.0.0.1:${PORT}/`,
      `after: http://127.0.0.1:${PORT}/`,
    ]);
    expect(uploaded[0]!.bytes!.equals(before!)).toBe(true);
    expect(uploaded[1]!.bytes!.equals(after!)).toBe(true);
    expect(slack.refused).toEqual([]);
    expect(github.refused).toEqual([]);
  });
});
