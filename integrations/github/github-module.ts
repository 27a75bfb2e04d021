import { readFile } from 'node:fs/promises';
import type { IntegrationContext, IntegrationModule } from '../integration-module.ts';
import { PatchbayError } from '../../src/core/errors.ts';
import type { IdentityProof } from '../../src/core/identity-proof.ts';
import type { Logger } from 'pino';
import { createGitHubClient, type GitHubClient } from './github-client.ts';
import type { GitHubConfig } from './github-env.ts';
import { createGitHubReplier } from './github-replier.ts';
import { createPublisher } from './github-publish.ts';
import { createRepositoryScout } from './github-scout.ts';
import { createGitHubRepoAccess } from './github-repo-access.ts';
import { oauthStartLink, PAGE_SIGN_IN_PATH } from './github-oauth-routes.ts';
import { githubRoutes } from './github-routes.ts';
import { createGitHubStore, type GitHubStore } from './github-store.ts';
import { githubImageHosts } from './github-images.ts';
import { createGitHubInterpreter } from './github-interpreter.ts';
import { postProgressOnce } from './progress-comment-once.ts';
import { ProgressComments } from './progress-comments.ts';
import { createSecretBox, type SecretBox } from './secret-box.ts';
import { OutcomeBackfill } from './outcome-tracker.ts';
import { DeliverySweep } from './delivery-sweep.ts';
import { GitHubEventPoller } from './event-poller.ts';
import { PollMarks } from './poll-marks.ts';

/** The first look for lost deliveries ever made goes back a day (GitHub keeps them three). */
const firstRedeliveryLookbackMs = 24 * 3600_000;
/** The first poll of a list ever made goes back a quarter of an hour (a mention made while Patchbay started). */
const firstPollLookbackMs = 15 * 60_000;

/**
 * GitHub as a interpreter of Patchbay: webhooks in (mentions, reviews, the trigger label,
 * installations), progress comments out, installation-token git credentials for the host, and
 * pull requests opened or updated after each run.
 */
export type GitHubModule = IntegrationModule & {
  /** A one-hour sign-in link bound to this person, when GitHub sign-in is configured. */
  signInLink?: (actor: { source: string; id: string }) => string;
  /** owner/name of every repository the App is installed on (candidates other surfaces offer). */
  installedRepos: () => Promise<string[]>;
};

/** `proofs`: the identity proofs other integrations offer (Sign in with Slack), asked before GitHub's sign-in. */
export async function createGitHubModule(
  config: GitHubConfig,
  context: IntegrationContext<'github'>,
  proofs: readonly IdentityProof[] = [],
): Promise<GitHubModule> {
  const log = context.log.child({ integration: 'github' });
  const store = createGitHubStore(context.db);
  const client = await githubClientFor(config, store, log);
  const box = config.secretKey ? createSecretBox(config.secretKey) : undefined;
  // A request whose progress comment was not recorded (a failed post, a crash) gets it when shown.
  const comments = new ProgressComments(store, async (request, signal) => {
    const octokit = await client.forRepo({ owner: request.owner, repo: request.repo });
    const botLogin = (await client.identity()).login;
    return postProgressOnce({ octokit, botLogin, store, log }, request, signal);
  });
  const interpreter = createGitHubInterpreter({
    client,
    store,
    context,
    comments,
    gitUrl: config.gitUrl,
    triggerLabel: config.triggerLabel,
    ...(context.imageIntake && { images: { intake: context.imageIntake, hosts: githubImageHosts(config.gitUrl) } }),
    log,
  });
  const publisher = createPublisher({
    client,
    store,
    context,
    ...(box && { box }),
    gitUrl: config.gitUrl,
    draft: config.draft,
    log,
    family: context.family,
  });
  const scout = createRepositoryScout({ client, gitUrl: config.gitUrl, log, limits: { pulls: config.scout.pulls } });
  const outcomes = new OutcomeBackfill({ client, ledger: context.outcomes, log });
  const events = eventSource(config, client, store, context, log);
  const signInLink =
    config.oauth && box
      ? (actor: { source: string; id: string }) => oauthStartLink(box, context.publicUrl, actor)
      : undefined;
  const page = pageSignInRule(config, context, log);
  return {
    ...(signInLink && { signInLink }),
    ...(page && config.oauth && box && { pageSignIn: { name: 'GitHub', url: PAGE_SIGN_IN_PATH } }),
    installedRepos: () => store.installedRepos(),
    name: 'github',
    replier: createGitHubReplier({ client, store, context, comments, log }),
    routes: githubRoutes({
      webhookSecret: config.events.mode === 'webhooks' ? config.webhookSecret : undefined,
      store,
      inbox: context.inbox,
      client,
      ...(config.oauth && box && { oauth: oauthRoutes(config, config.oauth, box, context, proofs, page) }),
      log,
    }),
    async start() {
      await checkApp(client, config.apiUrl, log);
      outcomes.start();
      events.start();
    },
    async stop() {
      await events.stop();
      await outcomes.stop();
      await interpreter.stop();
    },
    interpreter,
    publisher,
    scout,
    gitCredentials: { name: 'github', gitEnv: (repo) => client.gitEnv(repo) },
    repoAccess: createGitHubRepoAccess({ client, store, gitUrl: config.gitUrl }),
  };
}

/** The App's client, with its private key as configured or read from its file. */
async function githubClientFor(config: GitHubConfig, store: GitHubStore, log: Logger): Promise<GitHubClient> {
  return createGitHubClient({
    appId: config.appId,
    privateKey: await readPrivateKey(config),
    apiUrl: config.apiUrl,
    gitUrl: config.gitUrl,
    ...(config.oauth && { oauth: config.oauth }),
    store,
    log,
  });
}

/** How often the delivery sweep looks for lost deliveries, and how far back its first look goes. */
function sweepTimes(config: GitHubConfig): { intervalMs: number; firstLookbackMs: number } {
  return { intervalMs: config.redeliveryIntervalMs, firstLookbackMs: firstRedeliveryLookbackMs };
}

/**
 * Where GitHub's events come from: webhooks, with the sweep that has lost deliveries sent again;
 * or, where no webhook can arrive, the poller asking GitHub's REST API for them.
 */
function eventSource(
  config: GitHubConfig,
  client: GitHubClient,
  store: GitHubStore,
  context: IntegrationContext<'github'>,
  log: Logger,
): DeliverySweep | GitHubEventPoller {
  if (config.events.mode === 'webhooks') return new DeliverySweep({ client, store, log, ...sweepTimes(config) });
  log.info({ seconds: config.events.pollIntervalMs / 1000 }, 'GitHub events by polling (GITHUB_EVENTS=polling)');
  return new GitHubEventPoller({
    client,
    marks: new PollMarks(context.db),
    inbox: context.inbox,
    log,
    intervalMs: config.events.pollIntervalMs,
    firstLookbackMs: firstPollLookbackMs,
  });
}

/** The App's private key, as configured or read from its file. */
async function readPrivateKey(config: GitHubConfig): Promise<string> {
  let privateKey = config.privateKey;
  if (!privateKey && config.privateKeyPath) {
    privateKey = await readFile(config.privateKeyPath, 'utf8').catch((error: unknown) => {
      throw new PatchbayError('config_invalid', `GITHUB_APP_PRIVATE_KEY_PATH ${config.privateKeyPath} cannot be read`, {
        cause: error,
      });
    });
  }
  if (!privateKey)
    throw new PatchbayError('config_invalid', 'Set GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_PATH');
  return privateKey;
}

/** The page's GitHub sign-in, when allowed people are named and the page has a token to guard it. */
function pageSignInRule(config: GitHubConfig, context: IntegrationContext<'github'>, log: Logger) {
  if (config.pageSignIn && !context.pageSignIns)
    log.warn(
      'WEB_SIGNIN_GITHUB_* is set but PATCHBAY_API_TOKEN is not: the page is open without sign-in, so GitHub sign-in to it is off',
    );
  return config.pageSignIn && context.pageSignIns ? { ...config.pageSignIn, sessions: context.pageSignIns } : undefined;
}

/** What the OAuth routes (sign-in for people, and the page's sign-in) need. */
function oauthRoutes(
  config: GitHubConfig,
  oauth: { clientId: string },
  box: SecretBox,
  context: IntegrationContext<'github'>,
  proofs: readonly IdentityProof[],
  page: ReturnType<typeof pageSignInRule>,
) {
  return {
    clientId: oauth.clientId,
    box,
    gitUrl: config.gitUrl,
    publicUrl: context.publicUrl,
    proofs,
    ...(page && { page }),
  };
}

/**
 * Fails start-up on a wrong App ID or key, with one clear line, instead of at the first webhook;
 * an unreachable GitHub is retried by the caller, without the client's own retries first.
 */
async function checkApp(client: GitHubClient, apiUrl: string, log: Logger): Promise<void> {
  const bot = await client.identity({ retries: 0 }).catch((error: unknown) => {
    throw githubStartError(error, apiUrl);
  });
  log.info({ bot: bot.login }, 'GitHub App ready');
}

/**
 * Why GET /app failed at start: GitHub answered and refused the App (its id or key), or it could
 * not be reached or failed itself (Octokit reports a failed fetch as a 500; retryable).
 */
export function githubStartError(error: unknown, apiUrl: string): unknown {
  const status = (error as { status?: unknown }).status;
  if (error instanceof PatchbayError || typeof status !== 'number') return error;
  const message = (error as Error).message;
  if (status >= 500) {
    return new PatchbayError(
      'service_unavailable',
      `GitHub cannot be reached at ${apiUrl} (${message}): check this host's network and GITHUB_API_URL`,
      { cause: error, retryable: true },
    );
  }
  return new PatchbayError(
    'config_invalid',
    `GitHub refused the App (GET /app: ${status} ${message}): check GITHUB_APP_ID and the private key`,
    { cause: error },
  );
}
