import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TieredWebClient } from '../../integrations/slack/slack-method-limits.ts';
import { postRecorded } from '../../integrations/slack/slack-post-once.ts';
import { createSlackStore, type SlackStore } from '../../integrations/slack/slack-store.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT = 'xoxb-test-intent';
const log = pino({ level: 'silent' });

/** Outside Slack's Marketplace a look at a thread costs a minute per 15 messages: it is made only when a post is in doubt. */
describe('a post Slack clearly did not make', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SlackStore;
  let slack: FakeSlackApi;
  let poster: TieredWebClient;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createSlackStore(database.db);
    slack = await startFakeSlackApi({ botToken: BOT, channels: ['C1'], marketplace: false });
    poster = new TieredWebClient(BOT, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
  });
  afterAll(async () => {
    await slack.close();
    await database.close();
  });

  it('is tried again without a look at the thread: its refusal left nothing in doubt', async () => {
    // The bot was removed from the channel: Slack refuses the post (ok: false), which is final.
    const thread = { source: 'slack' as const, teamId: 'T1', channel: 'C0GONE01', threadTs: '100.000001' };
    const post = () => postRecorded({ poster, store, log }, thread, 'status', { text: 'Working on it' });
    await expect(post()).rejects.toMatchObject({ data: { error: 'channel_not_found' } });
    await expect(post()).rejects.toMatchObject({ data: { error: 'channel_not_found' } });

    expect(slack.calls.map((c) => c.method)).toEqual(['chat.postMessage', 'chat.postMessage']);
    expect(slack.refused.map((r) => `${r.method} ${r.error}`)).toEqual([
      'chat.postMessage channel_not_found',
      'chat.postMessage channel_not_found',
    ]);
    expect(await store.intendPost(thread, 'status')).toBe(false);
  });
});

/** A one-a-minute method (a 1 s minute here): the calls a 429 held go one at a time, so none runs out of waits. */
describe('calls waiting under a held method', () => {
  let slack: FakeSlackApi;

  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT, channels: ['C1'], marketplace: false, readWindowMs: 1_000 });
  });
  afterAll(() => slack.close());

  it('seven reads at once under one read a minute: each gets its page, none sooner than its Retry-After', {
    timeout: 60_000,
  }, async () => {
    const web = new TieredWebClient(BOT, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
    const threads = Array.from({ length: 7 }, (_, i) =>
      slack.addMessage({ channel: 'C1', user: 'U0ALICE01', text: `t${i}` }),
    );
    // All waiting at the minute's end at once, six would meet a 429 again each time; the last would run out of waits.
    const reads = threads.map((ts) => web.conversations.replies({ channel: 'C1', ts, limit: 15 }));
    const pages = await Promise.all(reads);
    expect(pages.map((p) => p.messages?.[0]?.text)).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6']);
    // In line, each read after the first meets at most one 429 more than its first: 6 + 5.
    expect(slack.rateLimited.length).toBeLessThanOrEqual(11);
    expect(slack.early).toEqual([]);
    expect(slack.refused).toEqual([]);
  });
});
