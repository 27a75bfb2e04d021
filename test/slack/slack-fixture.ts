import { createRemote, type RemoteFixture } from '../git/git-fixture.ts';
import { startTestPatchbay, type PatchbayFixture } from '../helpers/patchbay-fixture.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { expect } from 'vitest';
import { DEFAULT_CHANNELS, startFakeSlackApi, type FakeSlackApi } from '../fakes/fake-slack-api.ts';
import { signBody, TEAM } from '../fakes/fake-slack-events.ts';
import { createScriptedProvider, type ScriptedTurn } from '../../src/models/scripted-provider.ts';
import type { ModelMessage } from '../../src/models/model-provider.ts';
import { contextFor } from '../../integrations/integration-module.ts';
import { createSlackModule } from '../../integrations/slack/slack-module.ts';
import type { RetryOptions } from '@slack/web-api';
import type { StartOptions } from '../../src/main.ts';

export const BOT_TOKEN = 'xoxb-test-0000-bot';
export const APP_TOKEN = 'xapp-1-test-0000-app';
export const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';

export const users = [
  { id: 'U0ALICE01', name: 'alice', realName: 'Alice Doe', email: 'alice@example.com' },
  { id: 'U0BOB0002', name: 'bob', realName: 'Bob Roe', email: 'bob@example.com' },
];

export type SlackFixture = {
  app: PatchbayFixture;
  slack: FakeSlackApi;
  remote: RemoteFixture;
  /** Swap the model's behaviour per test. */
  setScenario(decide: (messages: readonly ModelMessage[]) => ScriptedTurn): void;
  model: ReturnType<typeof createScriptedProvider>;
  post(body: string, headers: Record<string, string>): Promise<Response>;
  postEvent(payload: unknown, extra?: Record<string, string>): Promise<Response>;
  postAction(payload: unknown): Promise<Response>;
  sessionFor(channel: string, threadTs: string): Promise<Awaited<ReturnType<PatchbayFixture['store']['findByThread']>>>;
  dispose(): Promise<void>;
};

/** Patchbay with the Slack module over HTTP against the fake Web API, sessions cloning a local bare repo. */
export async function startSlackFixture(
  options: {
    socket?: { url: string };
    retryConfig?: RetryOptions;
    signInLink?: (actor: { source: string; id: string }) => string;
    /** Inbound pipeline tuning (retries), passed to startPatchbay. */
    inbound?: StartOptions['inbound'];
    /** SLACK_ALLOWED_TEAMS, parsed. */
    allowedTeams?: readonly string[];
    /** More settings for the server, as environment variables. */
    env?: Record<string, string>;
    /** The fake Web API's app kind: outside the Marketplace, its one-a-minute reads (and that minute). */
    slackApi?: { marketplace?: boolean; readWindowMs?: number };
  } = {},
): Promise<SlackFixture> {
  const remote = await createRemote();
  const slack = await startFakeSlackApi({
    botToken: BOT_TOKEN,
    appToken: APP_TOKEN,
    users,
    channels: [...DEFAULT_CHANNELS, 'D0BOBDM01'],
    ...options.slackApi,
  });
  if (options.socket) slack.setSocketUrl(options.socket.url);
  let decide: (messages: readonly ModelMessage[]) => ScriptedTurn = () => ({ text: 'nothing to do' });
  const model = createScriptedProvider({ scenario: (messages) => decide(messages) });
  const app = await startTestPatchbay({
    model,
    serve: true,
    ...(options.inbound && { inbound: options.inbound }),
    ...(options.env && { env: options.env }),
    integrations: async (context) => [
      createSlackModule({
        config: {
          botToken: BOT_TOKEN,
          apiUrl: slack.apiUrl,
          ...(options.socket ? { appToken: APP_TOKEN } : { signingSecret: SIGNING_SECRET }),
          ...(options.allowedTeams && { allowedTeams: options.allowedTeams }),
        },
        context: contextFor(context, 'slack'),
        repoUrlFor: () => remote.remote,
        retryConfig: options.retryConfig ?? { retries: 0 },
        ...(options.signInLink && { signInLink: options.signInLink }),
      }),
    ],
  });
  const post = (body: string, headers: Record<string, string>) =>
    fetch(`${app.url}/slack/events`, { method: 'POST', headers, body });
  return {
    app,
    slack,
    remote,
    model,
    setScenario: (next) => {
      decide = next;
    },
    post,
    postEvent(payload, extra = {}) {
      const signed = signBody(SIGNING_SECRET, JSON.stringify(payload));
      return post(signed.body, { ...signed.headers, ...extra });
    },
    postAction(payload) {
      const signed = signBody(SIGNING_SECRET, new URLSearchParams({ payload: JSON.stringify(payload) }).toString(), {
        contentType: 'application/x-www-form-urlencoded',
      });
      return post(signed.body, signed.headers);
    },
    sessionFor: (channel, threadTs) => app.store.findByThread({ source: 'slack', teamId: TEAM, channel, threadTs }),
    async dispose() {
      await app.dispose();
      await slack.close();
      await remote.cleanup();
      // Slack refused nothing Patchbay sent: no block over a limit, no unknown channel, no bad call.
      expect(slack.refused).toEqual([]);
    },
  };
}

export const assistantTurns = (messages: readonly ModelMessage[]) =>
  messages.filter((m) => m.role === 'assistant').length;

/** Waits until the fake has a message in the thread matching `test`. */
export function waitForPost(
  slack: FakeSlackApi,
  channel: string,
  threadTs: string,
  test: (text: string) => boolean,
  what: string,
) {
  return waitFor(async () => slack.thread(channel, threadTs).find((m) => test(m.text)), what, 30_000);
}
