import { WebClient } from '@slack/web-api';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSlackReplier } from '../../integrations/slack/slack-replier.ts';
import { createSlackStore } from '../../integrations/slack/slack-store.ts';
import type { SessionEvent, StoredEvent } from '../../src/core/events.ts';
import { createSessionStore } from '../../src/sessions/store/session-store.ts';
import { startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { createTestDatabase } from '../helpers/test-database.ts';

const BOT_TOKEN = 'xoxb-test-branch-link';
const log = pino({ level: 'silent' });
const ghe = 'https://ghe.acme.test/git';

/** The final reply links the pushed branch on the repository's own host, GitHub Enterprise included. */
describe('the Slack final reply for a pushed branch', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let slack: FakeSlackApi;

  beforeAll(async () => {
    database = await createTestDatabase();
    slack = await startFakeSlackApi({ botToken: BOT_TOKEN, channels: ['C7'] });
  });
  afterAll(async () => {
    await slack.close();
    await database.close();
    expect(slack.refused).toEqual([]);
  });

  const finish = async (id: string, repo: string, threadTs: string, repoBases?: string[]) => {
    const store = createSessionStore(database.db);
    const thread = { source: 'slack' as const, teamId: 'T1', channel: 'C7', threadTs };
    const { session } = await store.create({
      id,
      repo,
      prompt: 'p',
      title: 't',
      requester: { source: 'slack', id: 'U1', name: 'Alice' },
      thread,
    });
    const events: SessionEvent[] = [
      { type: 'branch-pushed', branch: 'patchbay/fix-docs', commit: 'abcdef0123456789', remote: 'origin' },
      { type: 'status-changed', from: 'running', to: 'completed' },
    ];
    const stored: StoredEvent[] = events.map((event, i) => ({
      sessionId: id,
      seq: 10 + i,
      at: new Date().toISOString(),
      event,
    }));
    const web = new WebClient(BOT_TOKEN, { slackApiUrl: slack.apiUrl, retryConfig: { retries: 0 } });
    const replier = createSlackReplier({
      web,
      store: createSlackStore(database.db),
      publicUrl: 'http://patchbay.test',
      log,
      ...(repoBases && { repoBases }),
    });
    await replier.reply({
      session: { ...session, status: 'completed' },
      thread,
      events: stored,
      state: undefined,
      signal: AbortSignal.timeout(10_000),
      children: [],
    });
    return slack
      .thread('C7', threadTs)
      .find((m) => /^:white_check_mark: (Pushed branch|Pull request|Finished)/.test(m.text))!.text;
  };

  it('links the branch on a GitHub Enterprise host', async () => {
    const text = await finish('s-ghe', `${ghe}/acme/widgets`, '300.000001', [ghe]);
    expect(text).toContain(
      `Pushed branch <${ghe}/acme/widgets/tree/patchbay/fix-docs|patchbay/fix-docs> (abcdef012345)`,
    );
  });

  it('links it on github.com, and names it plainly for a repository on no known host', async () => {
    expect(await finish('s-dotcom', 'https://github.com/acme/widgets.git', '300.000002')).toContain(
      '<https://github.com/acme/widgets/tree/patchbay/fix-docs|patchbay/fix-docs>',
    );
    expect(await finish('s-local', '/srv/git/widgets', '300.000003')).toContain('Pushed branch `patchbay/fix-docs`');
  });
});
