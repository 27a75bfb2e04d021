import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK_FOR_REPO } from '../../integrations/slack/slack-blocks.ts';
import { appMention, envelope, message } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';
/** The methods Patchbay calls through its post-once client (not the one a 429 would pause). */
const POSTER_METHODS = new Set(['chat.postMessage', 'conversations.replies']);

describe('Slack calls under rate limits and lost answers', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    f = await startSlackFixture({ retryConfig: { retries: 2, minTimeout: 50, maxTimeout: 200 } });
    f.slack.enforceTiers();
  });
  afterAll(() => f.dispose());

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
});
