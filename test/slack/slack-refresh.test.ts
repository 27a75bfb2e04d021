import { WebClient } from '@slack/web-api';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSlackReplier } from '../../integrations/slack/slack-replier.ts';
import { createSlackStore } from '../../integrations/slack/slack-store.ts';
import { createEventBus, type EventBus } from '../../src/sessions/notify/event-bus.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { startThreadNotifier } from '../../src/sessions/notify/thread-notifier.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-test-refresh';
const log = pino({ level: 'silent' });

describe('the Slack status message while a long step runs', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  let bus: EventBus;
  let slack: FakeSlackApi;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createSessionStore(database.db);
    bus = await createEventBus({ url: database.url, log });
    slack = await startFakeSlackApi({ botToken: BOT_TOKEN, channels: ['C9'] });
  });
  afterAll(async () => {
    await bus.close();
    await slack.close();
    await database.close();
  });

  it('keeps its elapsed time current without new events, and stops once the session ends', {
    timeout: 20_000,
  }, async () => {
    const thread = { source: 'slack' as const, teamId: 'T1', channel: 'C9', threadTs: '100.000001' };
    const { session } = await store.create({
      id: 's-long',
      repo: 'https://github.com/acme/widgets',
      prompt: 'p',
      title: 't',
      requester: { source: 'slack', id: 'U1', name: 'Alice' },
      thread,
    });
    await store.transition(session.id, 'start');
    // A second running session keeps the refresher busy after the first ends: its refreshes are
    // the sign that refresh passes went by, so the test waits for them, not for a fixed time.
    const beat = { source: 'slack' as const, teamId: 'T1', channel: 'C9', threadTs: '200.000001' };
    await store.create({
      id: 's-beat',
      repo: 'https://github.com/acme/widgets',
      prompt: 'p',
      title: 't',
      requester: { source: 'slack', id: 'U1', name: 'Alice' },
      thread: beat,
    });
    await store.transition('s-beat', 'start');
    let now = Date.parse(session.createdAt) + 5_000;
    // Each refresh reads the clock once, before it decides whether the message changed.
    let clockReads = 0;
    const clock = () => {
      clockReads += 1;
      return now;
    };
    const refreshes = async (n: number) => {
      const from = clockReads;
      await waitFor(async () => clockReads >= from + n, `${n} refresh passes`);
    };
    const web = new WebClient(BOT_TOKEN, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
    const reply = createSlackReplier({
      web,
      store: createSlackStore(database.db),
      publicUrl: 'http://patchbay.test',
      log,
      now: clock,
    });
    const notifier = startThreadNotifier({ store, db: database.db, bus, repliers: [reply], log, refreshMs: 100 });
    const inThread = (threadTs: string) => slack.thread('C9', threadTs);
    try {
      const status = await waitFor(async () => inThread(thread.threadTs)[0], 'the status message');
      await waitFor(async () => inThread(beat.threadTs)[0], 'the other status message');
      expect(status.text).toContain('5s');
      now += 90_000;
      await waitFor(async () => status.text.includes('1m 35s'), 'the elapsed time to move on');
      const edits = status.edits;
      // Two refreshes of both sessions read the clock four times; the third read starts a pass
      // after both of those ended.
      await refreshes(5);
      expect(status.edits).toBe(edits); // nothing changed, nothing sent

      await store.transition(session.id, 'finish', { patch: { result: { summary: 'done' } } });
      await waitFor(async () => status.text.includes(':white_check_mark:'), 'the final status');
      const final = status.text;
      now += 600_000;
      // Only the other session is refreshed now: three passes of it went by, none touched this one.
      await refreshes(3);
      expect(status.text).toBe(final);
      expect(inThread(thread.threadTs)).toHaveLength(2); // the status and the final reply
      expect(slack.refused).toEqual([]);
    } finally {
      await notifier.close();
    }
  });
});
