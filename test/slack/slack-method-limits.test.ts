import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK_FOR_REPO } from '../../integrations/slack/slack-blocks.ts';
import { appMention, envelope, message } from '../fakes/fake-slack-events.ts';
import { deliveriesWorked, waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';
/** The methods Patchbay calls through its post-once client (not the one a 429 would pause). */
const POSTER_METHODS = new Set(['chat.postMessage', 'conversations.replies']);
/** Slack's minute for conversations.replies outside its Marketplace (one call a minute), shortened. */
const READ_WINDOW_MS = 5_000;

/** The calls that looked at a thread, oldest first. */
const looksAt = (f: SlackFixture, threadTs: string) =>
  f.slack.calls.filter((c) => c.method === 'conversations.replies' && c.args.ts === threadTs);

/** As an app outside Slack's Marketplace: thread reads at one a (short) minute and 15 messages a page. */
describe('Slack calls under rate limits and lost answers', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture({
      retryConfig: { retries: 2, minTimeout: 50, maxTimeout: 200 },
      slackApi: { marketplace: false, readWindowMs: READ_WINDOW_MS },
    });
    f.slack.enforceTiers();
  });
  afterAll(async () => {
    await f.dispose();
    // No read asked for more than Slack gives outside the Marketplace, and no call came back before its Retry-After.
    expect(f.slack.clamped).toEqual([]);
    expect(f.slack.early).toEqual([]);
  });

  it('a 429 on one method is waited out by that method alone; other calls go on meanwhile', {
    timeout: 120_000,
  }, async () => {
    // A session that works a few seconds, its status message edited as it goes.
    f.setScenario((messages) =>
      messages.some((m) => m.role === 'assistant')
        ? { text: 'Nothing needed changing.' }
        : { toolCalls: [{ name: 'run_shell', input: { command: 'sleep 5' } }] },
    );
    const busy = appMention({
      user: 'U0ALICE01',
      text: 'check the readme of <https://github.com/acme/widgets|github.com/acme/widgets>',
    });
    await f.postEvent(envelope(busy));
    await waitFor(
      async () => f.slack.thread(CHANNEL, busy.ts).find((m) => m.metadata?.event_payload.key === 'status'),
      'the status message of the running session',
    );

    // Another person's request: its 👀 is refused for 6 s.
    f.slack.rateLimit('reactions.add', 6);
    const other = appMention({ user: 'U0BOB0002', text: 'fix the build' });
    await f.postEvent(envelope(other));
    await waitForPost(f.slack, CHANNEL, other.ts, (t) => t === ASK_FOR_REPO, 'the question back');

    const eyes = f.slack.calls.filter((c) => c.method === 'reactions.add' && c.args.timestamp === other.ts);
    expect(eyes).toHaveLength(2);
    const limitedAt = eyes[0]!.at;
    expect(eyes[1]!.at - limitedAt).toBeGreaterThanOrEqual(5_950);
    // The running session's calls were not held with it.
    const meanwhile = f.slack.calls.filter(
      (c) =>
        c.at > limitedAt && c.at < limitedAt + 5_500 && c.method !== 'reactions.add' && !POSTER_METHODS.has(c.method),
    );
    expect(meanwhile.map((c) => c.method)).not.toEqual([]);
    const session = await waitFor(() => f.sessionFor(CHANNEL, busy.ts), 'the session');
    expect((await waitForStatus(f.app, session.id, ['completed', 'failed'], 60_000)).status).toBe('completed');
    expect(f.slack.refused).toEqual([]);
  });

  it("the interpreter's own question is posted once when the answer to its post was lost", {
    timeout: 60_000,
  }, async () => {
    f.slack.dropAfterAccept('chat.postMessage');
    const mention = appMention({ user: 'U0ALICE01', text: 'tidy the docs' });
    await f.postEvent(envelope(mention));
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t === ASK_FOR_REPO, 'the question back');
    // Given time to post it again, were it going to.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(f.slack.thread(CHANNEL, mention.ts).filter((m) => m.text === ASK_FOR_REPO)).toHaveLength(1);
    expect(f.slack.calls.some((c) => c.method === 'conversations.replies' && c.args.ts === mention.ts)).toBe(true);
    expect(f.slack.refused).toEqual([]);
  });

  it('"stop" in a thread with nothing running is answered once when the answer to the post was lost', {
    timeout: 90_000,
  }, async () => {
    f.setScenario(() => ({ text: 'Nothing needed changing.' }));
    const mention = appMention({
      user: 'U0ALICE01',
      text: 'check the readme of <https://github.com/acme/widgets|github.com/acme/widgets>',
    });
    await f.postEvent(envelope(mention));
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    await waitForStatus(f.app, session.id, ['completed', 'failed'], 60_000);
    await waitForPost(f.slack, CHANNEL, mention.ts, (t) => t.includes('Finished with no changes'), 'the final reply');

    f.slack.dropAfterAccept('chat.postMessage');
    await f.postEvent(envelope(message({ user: 'U0ALICE01', text: 'stop', threadTs: mention.ts })));
    const said = (t: string) => t.startsWith('Nothing is running here');
    await waitForPost(f.slack, CHANNEL, mention.ts, said, 'the answer to the stop');
    // Given time to post it again, were it going to.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(f.slack.thread(CHANNEL, mention.ts).filter((m) => said(m.text))).toHaveLength(1);
    expect(f.slack.refused).toEqual([]);
  });

  it('the note about a file it could not take in is posted once when the answer to its post was lost', {
    timeout: 90_000,
  }, async () => {
    f.setScenario(() => ({ text: 'Nothing needed changing.' }));
    const notes = f.slack.shareFile({
      name: 'notes.png',
      mimetype: 'image/png',
      bytes: Buffer.from('just some text\n'),
    });
    const mention = {
      ...appMention({
        user: 'U0ALICE01',
        text: 'check the readme of <https://github.com/acme/widgets|github.com/acme/widgets>',
      }),
      subtype: 'file_share',
      files: [notes],
    };
    // The note is the first post of this request: the session's own come after it is taken in.
    f.slack.dropAfterAccept('chat.postMessage');
    await f.postEvent(envelope(mention));
    const said = (t: string) => t.startsWith('I could not take in');
    await waitForPost(f.slack, CHANNEL, mention.ts, said, 'the note about the file');
    const session = await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    await waitForStatus(f.app, session.id, ['completed', 'failed'], 60_000);
    const notesPosted = f.slack.thread(CHANNEL, mention.ts).filter((m) => said(m.text));
    expect(notesPosted.map((m) => m.text)).toEqual([
      expect.stringContaining('notes.png: it is not a PNG, JPEG, GIF or WebP image'),
    ]);
    expect(f.slack.refused).toEqual([]);
  });

  it('finds a post whose answer was lost on the second page of a long thread, 15 a page, and does not post it again', {
    timeout: 60_000,
  }, async () => {
    // A thread of 17 messages before Patchbay is asked in it: its answer is the 18th, on the second page.
    const parent = f.slack.addMessage({ channel: CHANNEL, user: 'U0BOB0002', text: 'the release notes are stale' });
    for (let i = 0; i < 16; i += 1)
      f.slack.addMessage({
        channel: CHANNEL,
        user: i % 2 ? 'U0ALICE01' : 'U0BOB0002',
        text: `idea ${i}`,
        threadTs: parent,
      });
    f.slack.dropAfterAccept('chat.postMessage');
    const mention = appMention({ user: 'U0ALICE01', text: 'tidy the docs', threadTs: parent });
    await f.postEvent(envelope(mention));
    const asked = () => f.slack.thread(CHANNEL, parent).filter((m) => m.text === ASK_FOR_REPO);
    await waitForPost(f.slack, CHANNEL, parent, (t) => t === ASK_FOR_REPO, 'the question back');
    expect(f.slack.thread(CHANNEL, parent).findIndex((m) => m.text === ASK_FOR_REPO)).toBeGreaterThanOrEqual(15);
    // The delivery worked: the look done (its second page a read later: it waits out the first one's).
    await deliveriesWorked(f.app, 30_000);
    expect(asked()).toHaveLength(1);
    expect(looksAt(f, parent).filter((c) => c.args.cursor).length).toBeGreaterThanOrEqual(1);
    expect(f.slack.clamped).toEqual([]);
    expect(f.slack.early).toEqual([]);
    expect(f.slack.refused).toEqual([]);
  });

  it('two posts in doubt within one minute each appear once; calls of other methods and threads are not held', {
    timeout: 90_000,
  }, async () => {
    const since = Date.now();
    f.slack.dropAfterAccept('chat.postMessage', 2);
    const first = appMention({ user: 'U0ALICE01', text: 'tidy the docs' });
    const second = appMention({ user: 'U0BOB0002', text: 'bump the version' });
    await f.postEvent(envelope(first));
    await f.postEvent(envelope(second));
    // One look goes; the other is answered 429 (one read a minute) and waits its Retry-After.
    const limited = await waitFor(
      async () => f.slack.rateLimited.find((r) => r.method === 'conversations.replies' && r.at >= since),
      'a look refused by the one-a-minute rule',
    );
    const other = appMention({ user: 'U0BOB0002', text: 'rename the module' });
    await f.postEvent(envelope(other));
    await waitForPost(f.slack, CHANNEL, other.ts, (t) => t === ASK_FOR_REPO, 'the question in a third thread');
    const asked = (ts: string) => f.slack.thread(CHANNEL, ts).filter((m) => m.text === ASK_FOR_REPO);
    await deliveriesWorked(f.app, 30_000);
    const lastLook = [...looksAt(f, first.ts), ...looksAt(f, second.ts)].sort((a, b) => b.at - a.at)[0]!;
    expect(lastLook.at - limited.at).toBeGreaterThanOrEqual(limited.retryAfter * 1000 - 500);
    expect(asked(first.ts)).toHaveLength(1);
    expect(asked(second.ts)).toHaveLength(1);
    // The third thread's 👀 and question went while the look waited, not after it.
    const otherCalls = f.slack.calls.filter(
      (c) =>
        (c.method === 'reactions.add' && c.args.timestamp === other.ts) ||
        (c.method === 'chat.postMessage' && c.args.thread_ts === other.ts),
    );
    expect(otherCalls.map((c) => c.method).sort()).toEqual(['chat.postMessage', 'reactions.add']);
    expect(Math.max(...otherCalls.map((c) => c.at))).toBeLessThan(lastLook.at);
    expect(f.slack.early).toEqual([]);
    expect(f.slack.refused).toEqual([]);
  });
});
