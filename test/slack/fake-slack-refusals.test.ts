import { WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { questionMessage, statusMessage, candidatesMessage } from '../../integrations/slack/slack-blocks.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';

const BOT = 'xoxb-fake-refusals';
const button = (value: string, text = 'Go', action_id = 'a') => ({
  type: 'button',
  action_id,
  text: { type: 'plain_text', text },
  value,
});

/** The fake refuses what Slack refuses, and says so in `refused`. */
describe('the Slack fake refuses what Slack refuses', () => {
  let slack: FakeSlackApi;
  let web: WebClient;
  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT, channels: ['C1'] });
    web = new WebClient(BOT, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
  });
  afterAll(() => slack.close());

  const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['an unknown channel', { channel: 'C404', text: 'hi' }, 'channel_not_found', /not in C404/],
    [
      'a button value over 2000 characters',
      { channel: 'C1', text: 't', blocks: [{ type: 'actions', elements: [button('v'.repeat(2001))] }] },
      'invalid_blocks',
      /value: 2001 characters, over 2000/,
    ],
    [
      'a button label over 75 characters',
      { channel: 'C1', text: 't', blocks: [{ type: 'actions', elements: [button('v', 'x'.repeat(76))] }] },
      'invalid_blocks',
      /text\.text: 76 characters, over 75/,
    ],
    [
      'section text over 3000 characters',
      { channel: 'C1', text: 't', blocks: [{ type: 'section', text: { type: 'mrkdwn', text: 'x'.repeat(3001) } }] },
      'invalid_blocks',
      /over 3000/,
    ],
    [
      '51 blocks',
      { channel: 'C1', text: 't', blocks: Array.from({ length: 51 }, () => ({ type: 'divider' })) },
      'invalid_blocks',
      /51 blocks, over the 50/,
    ],
    [
      '26 buttons',
      {
        channel: 'C1',
        text: 't',
        blocks: [{ type: 'actions', elements: Array.from({ length: 26 }, (_, i) => button('v', 'b', `a${i}`)) }],
      },
      'invalid_blocks',
      /1-25 elements/,
    ],
    [
      'a repeated action_id',
      { channel: 'C1', text: 't', blocks: [{ type: 'actions', elements: [button('1'), button('2')] }] },
      'invalid_blocks',
      /a is not unique/,
    ],
    ['text over 40,000 characters', { channel: 'C1', text: 'x'.repeat(40_001) }, 'msg_too_long', /40001/],
  ];
  for (const [what, args, error, detail] of cases) {
    it(`refuses ${what}`, async () => {
      const before = slack.refused.length;
      await expect(web.chat.postMessage(args as never)).rejects.toMatchObject({ data: { ok: false, error } });
      expect(slack.refused.slice(before)).toEqual([
        { method: 'chat.postMessage', error, detail: expect.stringMatching(detail) },
      ]);
    });
  }

  it("takes Patchbay's own messages at their largest", async () => {
    const before = slack.refused.length;
    const choices = Array.from({ length: 30 }, (_, i) => `${i}: ${'a very long choice '.repeat(200)}`);
    await web.chat.postMessage({
      channel: 'C1',
      ...questionMessage({
        questionId: 'q'.repeat(40),
        question: 'q?'.repeat(5000),
        choices,
        recommended: choices[3]!,
      }),
    } as never);
    await web.chat.postMessage({
      channel: 'C1',
      ...statusMessage({
        repo: 'r'.repeat(5000),
        step: 's',
        elapsed: '1s',
        link: 'http://x',
        active: true,
        icon: ':x:',
      }),
    } as never);
    const many = Array.from({ length: 30 }, (_, i) => ({ owner: 'o'.repeat(100), repo: `r${i}`, raw: `o/r${i}` }));
    await web.chat.postMessage({
      channel: 'C1',
      ...candidatesMessage(many as never, many[0] as never, 'why'),
    } as never);
    expect(slack.refused.slice(before)).toEqual([]);
  });
});

/** Slack's agent surface: the fake refuses what Slack documents it refuses (fake-slack-agent.ts). */
describe("the Slack fake's agent surface refuses what Slack refuses", () => {
  let slack: FakeSlackApi;
  let web: WebClient;
  const thread = '1700000001.000100';
  beforeAll(async () => {
    slack = await startFakeSlackApi({ botToken: BOT, channels: ['C1'], streamLifetimeMs: 200 });
    web = new WebClient(BOT, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
  });
  afterAll(() => slack.close());
  const error = (call: Promise<unknown>) =>
    call.then(
      () => 'ok',
      (e: { data?: { error?: string } }) => e.data?.error,
    );

  it('refuses a status Slack does not know, a thread that is no ts, and a channel stream without its recipients', async () => {
    expect(await error(web.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: thread, status: 'busy' }))).toBe(
      'invalid_arguments',
    );
    expect(await error(web.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: 'x', status: 'processing' }))).toBe(
      'invalid_thread_ts',
    );
    expect(await error(web.chat.startStream({ channel: 'C1', thread_ts: thread, markdown_text: 'hi' }))).toBe(
      'missing_recipient_user_id',
    );
    expect(slack.refused.map((r) => r.error)).toEqual([
      'invalid_arguments',
      'invalid_thread_ts',
      'missing_recipient_user_id',
    ]);
  });

  it('refuses appending to a stream that stopped or outlived its lifetime', async () => {
    const to = { recipient_user_id: 'U1', recipient_team_id: 'T1' };
    const first = await web.chat.startStream({ channel: 'C1', thread_ts: thread, markdown_text: 'a', ...to });
    await web.chat.stopStream({ channel: 'C1', ts: first.ts!, session_status: 'active' });
    expect(await error(web.chat.appendStream({ channel: 'C1', ts: first.ts!, markdown_text: 'b' }))).toBe(
      'message_not_in_streaming_state',
    );
    const second = await web.chat.startStream({ channel: 'C1', thread_ts: thread, markdown_text: 'a', ...to });
    await new Promise((r) => setTimeout(r, 300));
    expect(await error(web.chat.appendStream({ channel: 'C1', ts: second.ts!, markdown_text: 'b' }))).toBe(
      'message_not_in_streaming_state',
    );
    expect(slack.agent.statusesOf('C1', thread)).toEqual(['active']);
  });

  it('answers unknown_method where the workspace has no agent surface, and missing_scope without assistant:write', async () => {
    slack.agent.state.available = false;
    expect(await error(web.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: thread, status: 'active' }))).toBe(
      'unknown_method',
    );
    slack.agent.state.available = true;
    const bare = await startFakeSlackApi({ botToken: BOT, channels: ['C1'], scopes: ['chat:write'] });
    const client = new WebClient(BOT, { slackApiUrl: bare.apiUrl, retryConfig: { retries: 0 } });
    expect(
      await error(client.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: thread, status: 'active' })),
    ).toBe('missing_scope');
    await bare.close();
  });
});
