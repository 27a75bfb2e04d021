import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appMention, envelope, signBody } from '../fakes/fake-slack-events.ts';
import { waitFor, waitForStatus } from '../helpers/wait-for.ts';
import { SIGNING_SECRET, startSlackFixture, waitForPost, type SlackFixture } from './slack-fixture.ts';

const CHANNEL = 'C123ABC456';

describe('Slack deliveries through the durable inbound pipeline', () => {
  let f: SlackFixture;
  beforeAll(async () => {
    // Two attempts, a second apart: enough to see the retry and the give-up without waiting long.
    f = await startSlackFixture({ inbound: { retry: { retries: 1, delaySeconds: 1, maxDelaySeconds: 1 } } });
  });
  afterAll(() => f.dispose());

  const stored = async () => (await f.app.inbound.list()).filter((d) => d.source === 'slack');

  it('stores a replayed signed event once, and the same message under a new event id too, and starts one session', async () => {
    f.setScenario(() => ({ text: 'done' }));
    const mention = appMention({ user: 'U0ALICE01', text: 'tidy <https://github.com/acme/widgets>' });
    const signed = signBody(SIGNING_SECRET, JSON.stringify(envelope(mention)));
    expect((await f.post(signed.body, signed.headers)).status).toBe(200);
    await waitFor(() => f.sessionFor(CHANNEL, mention.ts), 'the session');
    // The same signed bytes again (Slack's retry, or anyone replaying them inside the signature window) …
    expect(
      (
        await f.post(signed.body, {
          ...signed.headers,
          'x-slack-retry-num': '1',
          'x-slack-retry-reason': 'http_timeout',
        })
      ).status,
    ).toBe(200);
    // … and the same message as the other event Slack sends for it, under a new event id.
    expect((await f.postEvent(envelope({ ...mention, type: 'message', channel_type: 'channel' }))).status).toBe(200);
    const rows = (await stored()).filter((d) => d.dedupeKey === `msg:${CHANNEL}:${mention.ts}`);
    expect(rows).toHaveLength(1);
    await waitFor(
      async () => (await stored()).find((d) => d.id === rows[0]!.id && d.status === 'done'),
      'the delivery worked',
    );
    expect((await f.app.store.list()).filter((s) => s.prompt.startsWith('tidy'))).toHaveLength(1);
    expect(f.slack.reactions.filter((r) => r.timestamp === mention.ts)).toHaveLength(1);
    // Let the session end and its thread hear every event, so its posts cannot take the next test's rate limits.
    const session = (await f.sessionFor(CHANNEL, mention.ts))!;
    await waitForStatus(f.app, session.id, ['completed', 'failed', 'cancelled'], 60_000);
    await waitFor(
      async () => {
        const last = (await f.app.store.events(session.id)).at(-1)!.seq;
        const row = await f.app.database.db
          .selectFrom('session_threads')
          .select('replied_seq')
          .where('session_id', '=', session.id)
          .executeTakeFirst();
        return row !== undefined && Number(row.replied_seq) >= last;
      },
      'every event replied in the thread',
      60_000,
    );
  });

  it('retries a delivery that fails, and after its last attempt says why in its thread and lists it at GET /api/deliveries?failed=true', async () => {
    // The reply asking for the repository is refused (429) on every call of both attempts: six
    // calls each (the poster waits out five 429s under the post's channel alone), then the delivery fails.
    f.slack.rateLimit('chat.postMessage', 0, 12);
    const mention = appMention({ user: 'U0ALICE01', text: 'fix the flaky checkout test' });
    expect((await f.postEvent(envelope(mention))).status).toBe(200);
    const reply = await waitForPost(
      f.slack,
      CHANNEL,
      mention.ts,
      (text) => text.startsWith('Sorry, I could not process this message'),
      'the failure reply',
    );
    expect(reply.text).toContain('A rate-limit has been reached');
    const response = await fetch(`${f.app.url}/api/deliveries?failed=true`);
    expect(response.status).toBe(200);
    const failed = (await response.json()) as {
      source: string;
      dedupeKey: string;
      attempts: number;
      status: string;
      error: string;
    }[];
    expect(failed).toEqual([
      expect.objectContaining({
        source: 'slack',
        dedupeKey: `msg:${CHANNEL}:${mention.ts}`,
        status: 'failed',
        attempts: 2,
      }),
    ]);
    expect(failed[0]!.error).toContain('A rate-limit has been reached');
    // Six calls at the question in each of two attempts, then the one failure reply; nothing else in the thread.
    expect(
      f.slack.calls.filter((c) => c.method === 'chat.postMessage' && c.args.thread_ts === mention.ts),
    ).toHaveLength(13);
    expect(f.slack.thread(CHANNEL, mention.ts)).toHaveLength(1);
  });
});
