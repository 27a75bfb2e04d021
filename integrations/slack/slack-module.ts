import { WebClient, type RetryOptions } from '@slack/web-api';
import type { IntegrationContext, IntegrationModule } from '../integration-module.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import { createActorDirectory } from './slack-actors.ts';
import type { SlackConfig } from './slack-env.ts';
import { createSlackInbound, createSlackSurface, slackRoutes, type SlackInbound } from './slack-inbound.ts';
import { slackLogger } from './slack-logger.ts';
import { createSlackReplier } from './slack-replier.ts';
import { createSlackSocket } from './slack-socket.ts';
import { createSlackStore } from './slack-store.ts';

export type SlackModuleOptions = {
  config: SlackConfig;
  context: IntegrationContext;
  /** The session's repo string (clone URL) for a GitHub repository; `https://github.com/owner/repo` by default. */
  repoUrlFor?: (owner: string, repo: string) => string;
  /** The git host the session repos are on (GITHUB_GIT_URL), for branch links; github.com by default. */
  gitUrl?: string;
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
 * (SLACK_APP_TOKEN) into the inbound pipeline, worked by the Slack surface after the ack; thread
 * replies out through the Web API at SLACK_API_URL.
 */
export function createSlackModule(options: SlackModuleOptions): IntegrationModule {
  const { config, context } = options;
  const log = context.log.child({ integration: 'slack' });
  const retryConfig = options.retryConfig ?? defaultRetry;
  const web = new WebClient(config.botToken, { slackApiUrl: config.apiUrl, retryConfig, rejectRateLimitedCalls: false, logger: slackLogger(log) });
  const store = createSlackStore(context.db);
  const repoUrlFor = options.repoUrlFor ?? ((owner, repo) => `https://github.com/${owner}/${repo}`);
  const socketMode = Boolean(config.appToken);
  const socket = socketMode ? createSlackSocket({ appToken: config.appToken!, apiUrl: config.apiUrl, inbox: context.inbox, log }) : undefined;
  let inbound: SlackInbound | undefined;

  return {
    replier: createSlackReplier({ web, store, publicUrl: context.publicUrl, log, repoBases: [options.gitUrl ?? 'https://github.com'] }),
    surface: createSlackSurface({ inbound: () => inbound, web }),
    ...(!socketMode && { routes: slackRoutes({ signingSecret: config.signingSecret!, inbox: context.inbox, log }) }),
    async start() {
      let auth;
      try {
        auth = await web.auth.test();
      } catch (error) {
        throw new PatchbayError('config_invalid', `Slack refused SLACK_BOT_TOKEN (auth.test: ${(error as Error).message}): check the token on the app's OAuth & Permissions page`, { cause: error });
      }
      const botUserId = auth.user_id ?? '';
      // The workspace the bot token belongs to is home; Slack Connect guests need SLACK_ALLOWED_TEAMS.
      const teams = { home: auth.team_id ?? '', allowed: config.allowedTeams ?? [] };
      inbound = createSlackInbound({
        context,
        store,
        web,
        actors: createActorDirectory({ web, log }),
        log,
        botUserId,
        repoUrlFor,
        ...(options.repoHosts && { repoHosts: options.repoHosts }),
        ...(options.signInLink && { signInLink: options.signInLink }),
        teams,
      });
      await socket?.start();
      log.info({ mode: socketMode ? 'socket' : 'http', botUserId, team: teams.home, allowedTeams: teams.allowed }, 'Slack connected');
    },
    async stop() {
      await socket?.stop();
    },
  };
}
