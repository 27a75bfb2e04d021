import type { App } from '@slack/bolt';
import { WebClient, type RetryOptions } from '@slack/web-api';
import type { IntegrationContext, IntegrationModule } from '../integration-module.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import { createActorDirectory } from './slack-actors.ts';
import { boltLogger, createSlackApp, createSocketReceiver } from './slack-app.ts';
import type { SlackConfig } from './slack-env.ts';
import { createSlackInbound } from './slack-inbound.ts';
import { createFastifyReceiver } from './slack-receiver.ts';
import { createSlackReplier } from './slack-replier.ts';
import { createSlackStore } from './slack-store.ts';

export type SlackModuleOptions = {
  config: SlackConfig;
  context: IntegrationContext;
  /** The session's repo string (clone URL) for a GitHub repository; `https://github.com/owner/repo` by default. */
  repoUrlFor?: (owner: string, repo: string) => string;
  /** Hosts whose repository links count in a message; github.com by default. */
  repoHosts?: readonly string[];
  /** Web API retries: rate limits wait for Retry-After, other failures back off. */
  retryConfig?: RetryOptions;
  /** A GitHub sign-in link for a person, when GitHub sign-in is configured ("connect github"). */
  signInLink?: (actor: { source: string; id: string }) => string;
};

// Slack rate limits are per method and minute; a few retries over a couple of minutes ride them out.
const defaultRetry: RetryOptions = { retries: 5, factor: 2, minTimeout: 1_000, maxTimeout: 30_000 };

/**
 * Slack as Patchbay's front door: events over HTTP (POST /slack/events, signed) or Socket Mode
 * (SLACK_APP_TOKEN), thread replies out through the Web API at SLACK_API_URL.
 */
export function createSlackModule(options: SlackModuleOptions): IntegrationModule {
  const { config, context } = options;
  const log = context.log.child({ integration: 'slack' });
  const retryConfig = options.retryConfig ?? defaultRetry;
  const web = new WebClient(config.botToken, { slackApiUrl: config.apiUrl, retryConfig, rejectRateLimitedCalls: false, logger: boltLogger(log) });
  const store = createSlackStore(context.db);
  const repoUrlFor = options.repoUrlFor ?? ((owner, repo) => `https://github.com/${owner}/${repo}`);
  const socketMode = Boolean(config.appToken);
  const httpReceiver = !socketMode ? createFastifyReceiver({ signingSecret: config.signingSecret!, log }) : undefined;
  let app: App | undefined;

  return {
    replier: createSlackReplier({ web, store, publicUrl: context.publicUrl, log }),
    ...(httpReceiver && { routes: (fastify) => httpReceiver.routes(fastify) }),
    async start() {
      let auth;
      try {
        auth = await web.auth.test();
      } catch (error) {
        throw new PatchbayError('config_invalid', `Slack refused SLACK_BOT_TOKEN (auth.test: ${(error as Error).message}): check the token on the app's OAuth & Permissions page`, { cause: error });
      }
      const botUserId = auth.user_id ?? '';
      const inbound = createSlackInbound({
        context,
        store,
        web,
        actors: createActorDirectory({ web, log }),
        log,
        botUserId,
        repoUrlFor,
        ...(options.repoHosts && { repoHosts: options.repoHosts }),
        ...(options.signInLink && { signInLink: options.signInLink }),
      });
      const receiver = httpReceiver ?? createSocketReceiver({ appToken: config.appToken!, apiUrl: config.apiUrl, log });
      app = createSlackApp({
        botToken: config.botToken,
        botId: auth.bot_id ?? '',
        botUserId,
        apiUrl: config.apiUrl,
        retryConfig,
        receiver,
        inbound,
        recordDelivery: (eventId) => context.recordDelivery('slack', eventId),
        log,
      });
      if (socketMode) await app.start();
      log.info({ mode: socketMode ? 'socket' : 'http', botUserId }, 'Slack connected');
    },
    async stop() {
      if (socketMode) await app?.stop();
    },
  };
}
