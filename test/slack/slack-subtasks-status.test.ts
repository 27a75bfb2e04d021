import { WebClient } from '@slack/web-api';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSlackReplier } from '../../integrations/slack/slack-replier.ts';
import { createSlackStore } from '../../integrations/slack/slack-store.ts';
import type { Actor } from '../../src/core/actor.ts';
import { createEventBus, type EventBus } from '../../src/sessions/notify/event-bus.ts';
import { createSessionStore, type SessionStore } from '../../src/sessions/store/session-store.ts';
import { startThreadNotifier } from '../../src/sessions/notify/thread-notifier.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-test-subtasks';
const log = pino({ level: 'silent' });
const alice: Actor = { source: 'slack', id: 'U1', name: 'Alice' };
const repo = 'https://github.com/acme/widgets';

/**
 * The parent's Slack status message lists its sub-tasks (issue 22) and follows them: a child's
 * status is written in the child's own log, and still the parent's message changes with it.
 */
describe('the Slack status message of a session that fanned out', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: SessionStore;
  let bus: EventBus;
  let slack: FakeSlackApi;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = createSessionStore(database.db);
    bus = await createEventBus({ url: database.url, log });
    slack = await startFakeSlackApi({ botToken: BOT_TOKEN, channels: ['C5'] });
  });
  afterAll(async () => {
    await bus.close();
    await slack.close();
    await database.close();
  });

  it('lists the children and is edited when one of them starts, opens its PR or fails', {
    timeout: 30_000,
  }, async () => {
    const thread = { source: 'slack' as const, teamId: 'T1', channel: 'C5', threadTs: '500.000001' };
    await store.create({ id: 'parent', repo, prompt: 'p', title: 'Field in API and client', requester: alice, thread });
    await store.transition('parent', 'start');
    const web = new WebClient(BOT_TOKEN, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
    const replier = createSlackReplier({ web, store: createSlackStore(database.db), publicUrl: 'http://p.test', log });
    // No timed refresh within the test: only the children's changes can edit the message.
    const notifier = startThreadNotifier({ store, db: database.db, bus, repliers: [replier], log, refreshMs: 600_000 });
    try {
      const status = await waitFor(async () => slack.thread('C5', thread.threadTs)[0], 'the status message');
      expect(status.text).not.toContain('1.');

      const children = [
        { id: 'child-1', index: 1, title: 'API field', repo, branch: 'patchbay/field-sub-1' },
        {
          id: 'child-2',
          index: 2,
          title: 'Client',
          repo: 'https://github.com/acme/client',
          branch: 'patchbay/field-sub-2',
        },
      ].map((c) => ({ ...c, prompt: c.title }));
      await store.spawnChildren('parent', {
        callId: 'call-1',
        requester: alice,
        children,
        thread: { source: 'web' },
        step: {
          events: [
            {
              event: {
                type: 'subtasks-spawned',
                callId: 'call-1',
                children: children.map(({ id, index, title, repo, branch }) => ({
                  sessionId: id,
                  index,
                  title,
                  repo,
                  branch,
                })),
              },
            },
          ],
        },
      });
      const lines = () => status.text.split('\n').slice(1);
      await waitFor(async () => lines().length === 2, 'the sub-tasks in the status message');
      expect(lines()).toEqual([
        ':hourglass_flowing_sand: 1. <http://p.test/sessions/child-1|API field> · queued · <https://github.com/acme/widgets/tree/patchbay/field-sub-1|patchbay/field-sub-1>',
        ':hourglass_flowing_sand: 2. <http://p.test/sessions/child-2|Client> · *acme/client* · queued · <https://github.com/acme/client/tree/patchbay/field-sub-2|patchbay/field-sub-2>',
      ]);
      // The parent lets go of its run while its sub-tasks work: the thread shows it working, not asking.
      await store.transition('parent', 'ask', {
        reason: 'waiting for its sub-tasks',
        patch: { pendingQuestion: null },
      });
      await waitFor(
        async () => status.text.includes('Waiting for its sub-tasks'),
        'the parent waiting for its sub-tasks',
      );
      expect(status.text.split('\n')[0]).toMatch(
        /^:hourglass_flowing_sand: \*acme\/widgets\*: Waiting for its sub-tasks · \d+s · <http:\/\/p\.test\/sessions\/parent\|session page>$/,
      );
      const parentSeq = (await store.get('parent'))!.lastSeq;

      await store.transition('child-1', 'start');
      await waitFor(async () => lines()[0]!.includes('· running ·'), 'the first child running');
      await store.transition('child-2', 'start');
      await store.transition('child-2', 'finish', {
        patch: { result: { summary: 'done', prUrl: 'https://github.com/acme/client/pull/7' } },
      });
      await waitFor(async () => lines()[1]!.includes('completed'), 'the second child done');
      expect(lines()[1]).toBe(
        ':white_check_mark: 2. <http://p.test/sessions/child-2|Client> · *acme/client* · completed · <https://github.com/acme/client/pull/7|pull request>',
      );
      await store.transition('child-1', 'fail', { patch: { error: 'checks failed: lint' } });
      await waitFor(async () => lines()[0]!.startsWith(':x:'), 'the first child failed');
      expect(lines()[0]).toBe(
        ':x: 1. <http://p.test/sessions/child-1|API field> · failed: checks failed: lint · <https://github.com/acme/widgets/tree/patchbay/field-sub-1|patchbay/field-sub-1>',
      );
      // Nothing was written in the parent's log meanwhile: the children's own events moved its message.
      expect((await store.get('parent'))!.lastSeq).toBe(parentSeq);
      // The status line and the sub-tasks; Slack's own Stop button (its agent surface) stands in for ours.
      expect(status.blocks).toHaveLength(2);
      expect(slack.thread('C5', thread.threadTs)).toHaveLength(1);
      expect(slack.refused).toEqual([]);
    } finally {
      await notifier.close();
    }
  });
});
