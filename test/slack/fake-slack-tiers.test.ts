import { ErrorCode, WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';

const BOT = 'xoxb-fake-tiers';

/** What a call ends in: answered (ok, or Slack's own refusal), or the seconds Slack asked to wait. */
async function outcome(call: Promise<unknown>): Promise<'ok' | number> {
  try {
    await call;
    return 'ok';
  } catch (error) {
    const { code, retryAfter } = error as { code?: string; retryAfter?: number };
    if (code === ErrorCode.PlatformError) return 'ok';
    if (code !== ErrorCode.RateLimitedError) throw error;
    return retryAfter!;
  }
}

/** With tiers on, the fake answers as Slack's documented limits do: 429 with Retry-After, per method and per channel. */
describe('the Slack fake holds methods to their tiers', () => {
  let slack: FakeSlackApi;
  let web: WebClient;
  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT, channels: ['C1', 'C2'] });
    slack.enforceTiers();
    web = new WebClient(BOT, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
  });
  afterAll(() => slack.close());

  it('posts: about one a second per channel (a short burst allowed), each channel on its own', async () => {
    const post = (channel: string) => outcome(web.chat.postMessage({ channel, text: 'hi' }));
    const burst = [];
    for (let i = 0; i < 6; i += 1) burst.push(await post('C1'));
    expect(burst.slice(0, 5)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    expect(burst[5]).toBeGreaterThanOrEqual(1);
    expect(await post('C2')).toBe('ok');
  });

  it('a Tier 3 method past 50 calls a minute is refused with the wait; a Tier 4 one is not yet', async () => {
    const posted = await web.chat.postMessage({ channel: 'C2', text: 'to edit' });
    const edits = [];
    for (let i = 0; i < 51; i += 1)
      edits.push(await outcome(web.chat.update({ channel: 'C2', ts: posted.ts!, text: `v${i}` })));
    expect(edits.filter((e) => e === 'ok')).toHaveLength(50);
    expect(edits[50]).toBeGreaterThan(50);
    const infos = [];
    for (let i = 0; i < 51; i += 1) infos.push(await outcome(web.users.info({ user: 'U0NOBODY' })));
    expect(infos.every((r) => r === 'ok')).toBe(true);
  });
});

/** Outside the Marketplace: thread and channel reads at one a minute each and 15 objects a page, as Slack states it. */
describe('the Slack fake as an app outside the Marketplace', () => {
  let slack: FakeSlackApi;
  let web: WebClient;
  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT, channels: ['C1'], marketplace: false, readWindowMs: 2_000 });
    web = new WebClient(BOT, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
  });
  afterAll(() => slack.close());

  it('one read a minute per method, then 429 with the seconds left; a larger limit cut to 15 a page, with a cursor on', async () => {
    const parent = slack.addMessage({ channel: 'C1', user: 'U0ALICE01', text: 'hello' });
    for (let i = 0; i < 20; i += 1)
      slack.addMessage({ channel: 'C1', user: 'U0BOB0002', text: `r${i}`, threadTs: parent });
    const first = await web.conversations.replies({ channel: 'C1', ts: parent, limit: 200 });
    expect(first.messages?.map((m) => m.text)).toEqual(['hello', ...Array.from({ length: 14 }, (_, i) => `r${i}`)]);
    expect(first.has_more).toBe(true);
    expect(slack.clamped).toEqual([{ method: 'conversations.replies', asked: 200, given: 15 }]);
    const cursor = first.response_metadata!.next_cursor!;
    expect([1, 2]).toContain(await outcome(web.conversations.replies({ channel: 'C1', ts: parent, cursor })));
    // Another method has its own minute.
    expect(await outcome(web.conversations.history({ channel: 'C1' }))).toBe('ok');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const second = await web.conversations.replies({ channel: 'C1', ts: parent, cursor, limit: 15 });
    expect(second.messages?.map((m) => m.text)).toEqual(['r14', 'r15', 'r16', 'r17', 'r18', 'r19']);
    expect(second.has_more).toBe(false);
    expect(slack.refused).toEqual([]);
  });
});
