import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOnLoopback } from '../fakes/loopback.ts';
import type { Patchbay } from '../../src/main.ts';
import { startFakeAnthropic, type AnthropicRequest, type FakeAnthropic } from '../fakes/fake-anthropic.ts';
import { startFakeGitHub, type FakeGitHub } from '../fakes/fake-github.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../fakes/fake-openai.ts';
import { startFakeSlackApi, type FakeSlackApi, type SharedSlackFile } from '../fakes/fake-slack-api.ts';
import { appMention, envelope, message, signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { solidPng, startImagesApp } from './images-app.ts';

const BOT_TOKEN = 'xoxb-test-0000-bot';
const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const CHANNEL = 'C123ABC456';
const owner = 'octo-org';

/**
 * Pictures shared in Slack reach the model (issue 24): the fake Slack serves the file at its
 * `url_private` to the bot token only, Patchbay keeps it with the session, and the model's request
 * holds it as image input. Configured from the environment; every service is a loopback fake.
 */
describe('a PNG shared in a Slack thread reaches the model', () => {
  let github: FakeGitHub;
  let slack: FakeSlackApi;
  let upstream: RemoteFixture;
  let anthropic: FakeAnthropic;
  let openai: FakeOpenAI;
  let host: string;
  let png: Buffer;

  beforeAll(async () => {
    github = await startFakeGitHub();
    slack = await startFakeSlackApi({
      botToken: BOT_TOKEN,
      users: [{ id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' }],
    });
    upstream = await createRemote();
    await github.addRepo(owner, 'web', upstream.remote, 77);
    host = new URL(github.gitUrl).host;
    anthropic = await startFakeAnthropic({
      script: () => ({ content: [{ type: 'text', text: 'I see the button.' }] }),
    });
    openai = await startFakeOpenAI({ responses: () => ({ text: 'I see the button.' }) });
    png = await solidPng(40, 30);
  }, 60_000);
  afterAll(async () => {
    await anthropic?.close();
    await openai?.close();
    await github?.close();
    await slack?.close();
    await upstream?.cleanup();
  });

  const env = () => ({
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: slack.apiUrl,
    GITHUB_APP_ID: String(github.appId),
    GITHUB_APP_PRIVATE_KEY: github.privateKey,
    GITHUB_WEBHOOK_SECRET: 'images-webhook-secret',
    GITHUB_API_URL: github.apiUrl,
    GITHUB_GIT_URL: github.gitUrl,
  });
  const postEvent = (app: Patchbay, payload: unknown) => {
    const signed = signBody(SIGNING_SECRET, JSON.stringify(payload));
    return fetch(`${app.url}/slack/events`, { method: 'POST', headers: signed.headers, body: signed.body });
  };
  const withFiles = <T extends object>(event: T, files: SharedSlackFile[]) => ({
    ...event,
    subtype: 'file_share',
    files,
  });
  const sessionFor = (app: Patchbay, threadTs: string) =>
    waitFor(() => app.store.findByThread({ source: 'slack', teamId: TEAM, channel: CHANNEL, threadTs }), 'the session');

  it("Anthropic: the mention's PNG is an image block of the first user message", { timeout: 180_000 }, async () => {
    const app = await startImagesApp({
      ...env(),
      MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: anthropic.baseUrl,
    });
    try {
      const file = slack.shareFile({ name: 'button.png', mimetype: 'image/png', bytes: png });
      const mention = withFiles(
        appMention({ user: 'U0ALICE01', text: `the pay button is the wrong colour <https://${host}/${owner}/web>` }),
        [file],
      );
      expect((await postEvent(app, envelope(mention))).status).toBe(200);
      const session = await sessionFor(app, mention.ts);
      await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
      expect(anthropic.rejections).toEqual([]);
      const first = anthropic.calls[0]!.body.messages[0]!;
      expect(imageBlocks(first)).toEqual([
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') } },
      ]);
      expect(slack.fileDownloads).toEqual([{ path: new URL(file.url_private).pathname, served: true }]);
      const kept = await app.store.events(session.id, { types: ['user-message'] });
      expect(kept[0]!.event).toMatchObject({ attachments: [{ mediaType: 'image/png', name: 'button.png' }] });
    } finally {
      await app.dispose();
    }
    expect(slack.refused).toEqual([]);
  });

  it('a picture shared in the thread without words is a message, with the picture', { timeout: 180_000 }, async () => {
    const app = await startImagesApp({
      ...env(),
      MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: anthropic.baseUrl,
    });
    try {
      const mention = appMention({ user: 'U0ALICE01', text: `the header looks off <https://${host}/${owner}/web>` });
      expect((await postEvent(app, envelope(mention))).status).toBe(200);
      const session = await sessionFor(app, mention.ts);
      await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
      const file = slack.shareFile({ name: 'header.png', mimetype: 'image/png', bytes: png });
      const reply = withFiles(message({ user: 'U0ALICE01', text: '', threadTs: mention.ts }), [file]);
      expect((await postEvent(app, envelope(reply))).status).toBe(200);
      const said = await waitFor(async () => {
        const events = await app.store.events(session.id, { types: ['user-message'] });
        return events.length > 1 ? events.at(-1) : undefined;
      }, 'the picture as a message');
      expect(said.event).toMatchObject({ text: '(shared a picture)', attachments: [{ name: 'header.png' }] });
    } finally {
      await app.dispose();
    }
    expect(slack.refused).toEqual([]);
  });

  it('OpenAI Responses: a PNG in a thread reply is an input_image of that message', { timeout: 180_000 }, async () => {
    const app = await startImagesApp({
      ...env(),
      MODEL_PROVIDER: 'openai',
      OPENAI_API_KEY: 'test-openai-key',
      OPENAI_BASE_URL: openai.baseUrl,
    });
    try {
      const mention = appMention({ user: 'U0ALICE01', text: `look at the pay button <https://${host}/${owner}/web>` });
      expect((await postEvent(app, envelope(mention))).status).toBe(200);
      const session = await sessionFor(app, mention.ts);
      await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
      const before = openai.calls.length;
      const file = slack.shareFile({ name: 'after.png', mimetype: 'image/png', bytes: png });
      const reply = withFiles(message({ user: 'U0ALICE01', text: 'here is how it looks now', threadTs: mention.ts }), [
        file,
      ]);
      expect((await postEvent(app, envelope(reply))).status).toBe(200);
      await waitFor(async () => openai.calls.length > before || undefined, 'the second model call', 120_000);
      expect(openai.rejections).toEqual([]);
      const input = openai.calls.at(-1)!.body.input as Array<{ type?: string; role?: string; content?: unknown }>;
      const parts = input.flatMap((item) => (Array.isArray(item.content) ? item.content : [])) as Array<{
        type: string;
        image_url?: string;
      }>;
      expect(parts.filter((p) => p.type === 'input_image').map((p) => p.image_url)).toEqual([
        `data:image/png;base64,${png.toString('base64')}`,
      ]);
    } finally {
      await app.dispose();
    }
    expect(slack.refused).toEqual([]);
  });

  it('refuses a file on another host (nothing fetched), an oversized one and a non-image named .png; the thread is told, the session runs with the text', {
    timeout: 180_000,
  }, async () => {
    const foreignHits: string[] = [];
    const foreign = await listenOnLoopback(
      createServer((req, res) => {
        foreignHits.push(req.url ?? '');
        res.writeHead(200, { 'content-type': 'image/png' }).end(png);
      }),
    );
    const app = await startImagesApp({
      ...env(),
      MODEL_PROVIDER: 'anthropic',
      ANTHROPIC_API_KEY: 'test-anthropic-key',
      ANTHROPIC_BASE_URL: anthropic.baseUrl,
      IMAGE_MAX_BYTES: '20000',
    });
    try {
      const big = await solidPng(600, 400, { r: 10, g: 200, b: 30 });
      const noise = Buffer.from(Array.from({ length: 30_000 }, (_, i) => (i * 7919) % 256));
      const oversized = slack.shareFile({
        name: 'huge.png',
        mimetype: 'image/png',
        bytes: Buffer.concat([big, noise]),
      });
      const fake = slack.shareFile({
        name: 'notes.png',
        mimetype: 'image/png',
        bytes: Buffer.from('just some text\n'),
      });
      const elsewhere = { ...slack.shareFile({ name: 'elsewhere.png', mimetype: 'image/png', bytes: png }) };
      elsewhere.url_private = elsewhere.url_private_download = `http://127.0.0.1:${foreign.port}/elsewhere.png`;
      const calls = anthropic.calls.length;
      const mention = withFiles(
        appMention({ user: 'U0ALICE01', text: `fix the pay button <https://${host}/${owner}/web>` }),
        [elsewhere, oversized, fake],
      );
      expect((await postEvent(app, envelope(mention))).status).toBe(200);
      const session = await sessionFor(app, mention.ts);
      const done = await waitForStatus(app, session.id, ['completed', 'failed', 'cancelled'], 120_000);
      expect(done.error).toBeNull();
      expect(foreignHits).toEqual([]);
      const note = slack.thread(CHANNEL, mention.ts).find((m) => m.text.startsWith('I could not take in'));
      expect(note?.text).toContain('elsewhere.png: it is not on');
      expect(note?.text).toContain('huge.png: it is larger than the 20 KB limit');
      expect(note?.text).toContain('notes.png: it is not a PNG, JPEG, GIF or WebP image');
      expect(anthropic.rejections).toEqual([]);
      const first = anthropic.calls[calls]!.body.messages[0]!;
      expect(imageBlocks(first)).toEqual([]);
      expect(JSON.stringify(first.content)).toContain('fix the pay button');
    } finally {
      await app.dispose();
      await foreign.close();
    }
    expect(slack.refused).toEqual([]);
  });
});

function imageBlocks(message: AnthropicRequest['messages'][number]): unknown[] {
  return Array.isArray(message.content) ? message.content.filter((b) => b.type === 'image') : [];
}
