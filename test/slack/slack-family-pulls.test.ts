import { WebClient } from '@slack/web-api';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSlackReplier } from '../../integrations/slack/slack-replier.ts';
import { createSlackStore } from '../../integrations/slack/slack-store.ts';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import type { FamilyMember } from '../../src/core/session-family.ts';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-test-family-pulls';
const log = pino({ level: 'silent' });
const apiRepo = 'https://github.com/acme/api';
const clientRepo = 'https://github.com/acme/client.git';
const apiPr = 'https://github.com/acme/api/pull/12';
const clientPr = 'https://github.com/acme/client/pull/7';

/** A fan-out's thread gets every pull request of the family in the one final reply (issue 22). */
describe('the Slack final reply of a session family', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let slack: FakeSlackApi;

  beforeAll(async () => {
    database = await createTestDatabase();
    slack = await startFakeSlackApi({ botToken: BOT_TOKEN, channels: ['C8'] });
  });
  afterAll(async () => {
    await slack.close();
    await database.close();
  });

  /** Finishes session `id` with its PR opened, the family port answering `family`; returns the thread. */
  const finish = async (id: string, threadTs: string, family: FamilyMember[] | undefined, ownPr = true) => {
    const store = createSessionStore(database.db);
    const thread = { source: 'slack' as const, teamId: 'T1', channel: 'C8', threadTs };
    const { session } = await store.create({
      id,
      repo: apiRepo,
      prompt: 'p',
      title: 't',
      requester: { source: 'slack', id: 'U1', name: 'Alice' },
      thread,
    });
    const events: SessionEvent[] = [
      ...(ownPr
        ? [{ type: 'pr-opened', url: apiPr, number: 12, branch: `patchbay/${id}`, commit: 'abcdef0123456789' } as const]
        : []),
      { type: 'status-changed', from: 'running', to: 'completed' },
    ];
    const stored: StoredEvent[] = events.map((event, i) => ({
      sessionId: id,
      seq: 20 + i,
      at: session.createdAt,
      event,
    }));
    const replier = createSlackReplier({
      web: new WebClient(BOT_TOKEN, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } }),
      store: createSlackStore(database.db),
      publicUrl: 'http://patchbay.test',
      log,
      ...(family && { family: { family: async (sessionId: string) => (sessionId === id ? family : []) } }),
    });
    const update = {
      session: { ...session, status: 'completed' as const, result: { summary: 'API and client on v2.' } },
      thread,
      events: stored,
      state: undefined,
      children: [],
      signal: AbortSignal.timeout(10_000),
    };
    await replier.reply(update);
    // The same batch again (a crash between posting and recording): still one final reply.
    await replier.reply(update);
    return slack.thread('C8', threadTs).filter((m) => / pull requests?: /i.test(m.text));
  };

  it("lists the parent's and the other repository's pull requests in one message", async () => {
    const finals = await finish('parent', '400.000001', [
      { sessionId: 'parent', repo: apiRepo },
      { sessionId: 'child-1', repo: apiRepo },
      { sessionId: 'child-2', repo: clientRepo, prUrl: clientPr },
    ]);

    expect(finals.map((m) => m.text)).toEqual([
      `:white_check_mark: Opened 2 pull requests: <${apiPr}|acme/api#12> (acme/api), <${clientPr}|acme/client#7> (acme/client)\n>API and client on v2.`,
    ]);
    expect(slack.refused).toEqual([]);
  });

  it("lists the sub-tasks' pull requests for a parent that opened none of its own", async () => {
    const otherPr = 'https://github.com/acme/docs/pull/3';
    const two = await finish(
      'parent-3',
      '400.000004',
      [
        { sessionId: 'parent-3', repo: apiRepo },
        { sessionId: 'child-4', repo: clientRepo, prUrl: clientPr },
        { sessionId: 'child-5', repo: 'https://github.com/acme/docs', prUrl: otherPr },
      ],
      false,
    );
    const one = await finish(
      'parent-4',
      '400.000005',
      [
        { sessionId: 'parent-4', repo: apiRepo },
        { sessionId: 'child-6', repo: clientRepo, prUrl: clientPr },
      ],
      false,
    );

    expect(two.map((m) => m.text)).toEqual([
      `:white_check_mark: Opened 2 pull requests: <${clientPr}|acme/client#7> (acme/client), <${otherPr}|acme/docs#3> (acme/docs)\n>API and client on v2.`,
    ]);
    expect(one.map((m) => m.text)).toEqual([`:white_check_mark: Pull request: ${clientPr}\n>API and client on v2.`]);
    expect(slack.refused).toEqual([]);
  });

  it('keeps the one pull request line for a session alone, and for a child that ends in the thread', async () => {
    const alone = await finish('alone', '400.000002', undefined);
    const child = await finish('child-3', '400.000003', [
      { sessionId: 'parent-2', repo: clientRepo, prUrl: clientPr },
      { sessionId: 'child-3', repo: apiRepo },
    ]);

    expect(alone.map((m) => m.text)).toEqual([`:white_check_mark: Pull request: ${apiPr}\n>API and client on v2.`]);
    expect(child.map((m) => m.text)).toEqual([`:white_check_mark: Pull request: ${apiPr}\n>API and client on v2.`]);
    expect(slack.refused).toEqual([]);
  });
});
