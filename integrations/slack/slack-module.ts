import type { Logger } from 'pino';
import { ErrorCode, WebClient, type RetryOptions } from '@slack/web-api';
import { MethodLimits, TieredWebClient } from './slack-method-limits.ts';
import type { IntegrationContext, IntegrationModule } from '../integration-module.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import { createActorDirectory } from './slack-actors.ts';
import type { SlackConfig } from './slack-env.ts';
import { slackFileHosts } from './slack-files.ts';
import { SlackIdentity } from './slack-identity.ts';
import { slackLogger } from './slack-logger.ts';
import { createSlackReplier } from './slack-replier.ts';
import { slackRoutes } from './slack-routes.ts';
import { createSlackSocket } from './slack-socket.ts';
import { createSlackStore } from './slack-store.ts';
import { createSlackInterpreter, SlackRequests } from './slack-interpreter.ts';

export type SlackModuleOptions = {
  config: SlackConfig;
  context: IntegrationContext<'slack'>;
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
 * (SLACK_APP_TOKEN) into the inbound pipeline, worked by the Slack interpreter after the ack; thread
 * replies out through the Web API at SLACK_API_URL.
 */
export function createSlackModule(options: SlackModuleOptions): IntegrationModule {
  const { config, context } = options;
  const log = context.log.child({ integration: 'slack' });
  const { web, probe, poster } = slackClients(config, log, options.retryConfig ?? defaultRetry);
  const store = createSlackStore(context.db);
  const repoUrlFor = options.repoUrlFor ?? ((owner, repo) => `https://github.com/${owner}/${repo}`);
  const socketMode = Boolean(config.appToken);
  const socket = socketMode
    ? createSlackSocket({ appToken: config.appToken!, apiUrl: config.apiUrl, inbox: context.inbox, log })
    : undefined;
  // Learned from auth.test in start(); deliveries worked before then are retried.
  const identity = new SlackIdentity();
  const requests = new SlackRequests({
    context,
    store,
    web,
    poster,
    actors: createActorDirectory({ web, log }),
    log,
    identity,
    repoUrlFor,
    ...(options.repoHosts && { repoHosts: options.repoHosts }),
    ...(options.signInLink && { signInLink: options.signInLink }),
  });

  return {
    name: 'slack',
    replier: createSlackReplier({
      web,
      poster,
      store,
      publicUrl: context.publicUrl,
      log,
      repoBases: [options.gitUrl ?? 'https://github.com'],
      ...(context.artifacts && { screenshots: { web, artifacts: context.artifacts } }),
      ...(context.family && { family: context.family }),
    }),
    interpreter: createSlackInterpreter({
      requests,
      web,
      poster,
      store,
      log,
      ...(context.imageIntake && {
        files: {
          intake: context.imageIntake,
          botToken: config.botToken,
          fileHosts: slackFileHosts(config.apiUrl),
          say: { web, poster, store, log },
        },
      }),
    }),
    ...(!socketMode && { routes: slackRoutes({ signingSecret: config.signingSecret!, inbox: context.inbox, log }) }),
    async start() {
      let auth: Awaited<ReturnType<typeof probe.auth.test>>;
      try {
        // Without the SDK's retries: an unreachable Slack is the caller's to retry (with backoff,
        // the rest of Patchbay serving), not a start that hangs for half a minute and then dies.
        auth = await probe.auth.test();
      } catch (error) {
        throw slackStartError(error, config.apiUrl);
      }
      const botUserId = auth.user_id ?? '';
      // The workspace the bot token belongs to is home; Slack Connect guests need SLACK_ALLOWED_TEAMS.
      const teams = { home: auth.team_id ?? '', allowed: config.allowedTeams ?? [] };
      identity.learn({ botUserId, teams });
      await socket?.start();
      log.info(
        { mode: socketMode ? 'socket' : 'http', botUserId, team: teams.home, allowedTeams: teams.allowed },
        'Slack connected',
      );
    },
    async stop() {
      await socket?.stop();
    },
  };
}

/**
 * The module's three Web API clients: `web` for everything but posts, with the SDK's retries and
 * Slack's rate limits waited out per method (TieredWebClient), never by pausing every call;
 * `probe` for the start's auth.test, with no retries and the SDK's own line per failed request only
 * at debug (the caller says once what failed and what to check); `poster` for thread posts and the
 * looks at a thread before posting again, with no SDK retries (a post whose answer was lost is
 * looked for in the thread before it is made again; see postOnce) and its 429s waited out under
 * their own method too, on the same clock as `web`'s (Slack counts one app's calls together).
 */
function slackClients(config: SlackModuleOptions['config'], log: Logger, retryConfig: RetryOptions) {
  const sdkLog = slackLogger(log);
  const limits = new MethodLimits();
  const tiered = (options: ConstructorParameters<typeof WebClient>[1]) =>
    new TieredWebClient(config.botToken, { slackApiUrl: config.apiUrl, logger: sdkLog, ...options }, limits);
  return {
    web: tiered({ retryConfig }),
    probe: new WebClient(config.botToken, {
      slackApiUrl: config.apiUrl,
      retryConfig: { retries: 0 },
      logger: { ...sdkLog, warn: sdkLog.debug, error: sdkLog.debug },
    }),
    poster: tiered({ retryConfig: { retries: 0 } }),
  };
}

/**
 * Why auth.test failed at start: Slack answered and refused the token (fix the configuration), or
 * Slack could not be reached or failed itself (retryable: the network, SLACK_API_URL, Slack's status).
 */
export function slackStartError(error: unknown, apiUrl: string): PatchbayError {
  const { code, statusCode } = error as { code?: string; statusCode?: number };
  const message = (error as Error).message;
  if (code === ErrorCode.RequestError || (code === ErrorCode.HTTPError && (statusCode ?? 500) >= 500)) {
    return new PatchbayError(
      'service_unavailable',
      `Slack cannot be reached at ${apiUrl} (${message}): check this host's network and SLACK_API_URL`,
      { cause: error, retryable: true },
    );
  }
  return new PatchbayError(
    'config_invalid',
    `Slack refused SLACK_BOT_TOKEN (auth.test: ${message}): check the token on the app's OAuth & Permissions page`,
    { cause: error },
  );
}
